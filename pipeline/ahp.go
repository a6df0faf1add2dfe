package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/ahp/supervisor"
)

// openSupervisor connects the external AHP harness of
// harness.ahp.supervisor, if one is configured. The connection is made
// (and the handshake done) at the first action, and again whenever it was
// lost: a harness that is down when Harness starts refuses actions until
// it answers, it does not stop Harness from starting.
func (p *Pipeline) openSupervisor() error {
	sc := p.Config.Harness.AHP.Supervisor
	if !sc.Enabled() {
		return nil
	}
	c, err := ahp.NewClient(ahp.ClientOptions{
		Transport: sc.Transport, Command: sc.Command, URL: sc.URL, Socket: sc.Socket, APIKey: sc.Key(),
		Timeout: sc.Timeout(), Logger: p.log,
		Agent: ahp.AgentInfo{Framework: "harness", Version: ahp.Version,
			Capabilities: []string{"pre_action", "post_action", "error", "session_start", "session_end"}},
	})
	if err != nil {
		return fmt.Errorf("harness.ahp.supervisor: %w", err)
	}
	p.Supervisor = supervisor.New(c, supervisor.Options{
		Timeout: sc.Timeout(), MaxDefers: sc.MaxDefers, QueueSize: sc.QueueSize, Logger: p.log,
	})
	p.closers = append(p.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return p.Supervisor.Close(ctx)
	})
	return nil
}
