//go:build linux

package workspace

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// setupMounts prepares the helper's own mount namespace (see SandboxMain):
// nothing mounted here propagates to the service's namespace, the
// protected entries and the caller's binds become read-only, and with
// PIDNS a private /proc shows only the command's processes.
//
// Binds use the descriptor-based mount API (open_tree, mount_setattr,
// move_mount) on descriptors opened with O_NOFOLLOW in this namespace, so
// no path component can be swapped for a symlink between the check and the
// mount. The descriptors the service passed (Protect) are only compared
// with what is bound: they belong to the service's mount namespace, where
// a mount cannot be made.
func setupMounts(p sandboxPolicy) error {
	// Run by hand outside a new mount namespace, the helper would change
	// the mounts of its caller's. (As PID 1 of a new PID namespace it has
	// no visible parent; in a new user namespace it may not read its
	// parent's namespaces, and the service makes the two together.)
	if ppid := os.Getppid(); ppid > 0 {
		self, err := os.Readlink("/proc/self/ns/mnt")
		parent, perr := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", ppid))
		if err != nil || (perr == nil && self == parent) {
			return errors.New("--mount-ns: the helper is not in a mount namespace of its own")
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make every mount private: %w", err)
	}
	for _, pr := range p.Protect {
		err := protectInPlace(pr)
		syscall.Close(pr.FD)
		if err != nil {
			return err
		}
	}
	for _, b := range p.ROBinds {
		if err := bindReadOnlyPath(b[0], b[1]); err != nil {
			return err
		}
	}
	if p.PIDNS {
		// Read-only: uid 0 without capabilities may still write the
		// root-owned files of /proc/sys and /proc/sysrq-trigger.
		flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_RDONLY)
		if err := unix.Mount("proc", "/proc", "proc", flags, ""); err != nil {
			return fmt.Errorf("mount a private /proc: %w", err)
		}
	}
	return nil
}

// protectInPlace binds pr.Path read-only onto itself, after checking that it
// is still the file the service opened as pr.FD.
func protectInPlace(pr protectFD) error {
	fd, err := unix.Open(pr.Path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("protect %s: %w", pr.Path, err)
	}
	defer unix.Close(fd)
	var here, there unix.Stat_t
	if err := unix.Fstat(fd, &here); err != nil {
		return fmt.Errorf("protect %s: %w", pr.Path, err)
	}
	if err := unix.Fstat(pr.FD, &there); err != nil {
		return fmt.Errorf("protect %s: descriptor %d: %w", pr.Path, pr.FD, err)
	}
	if here.Dev != there.Dev || here.Ino != there.Ino {
		return fmt.Errorf("protect %s: it was replaced after the service checked it", pr.Path)
	}
	return bindReadOnly(fd, fd, pr.Path)
}

// bindReadOnlyPath binds src read-only over dst; neither may be a symlink.
func bindReadOnlyPath(src, dst string) error {
	open := func(path string) (int, error) {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, fmt.Errorf("bind %s over %s: %w", src, dst, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("bind %s over %s: %w", src, dst, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			return -1, fmt.Errorf("bind %s over %s: %s is a symlink", src, dst, path)
		}
		return fd, nil
	}
	sfd, err := open(src)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	dfd, err := open(dst)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return bindReadOnly(sfd, dfd, dst)
}

// bindReadOnly mounts a read-only, nosuid, nodev copy of the file or
// directory srcFD onto dstFD (a single mount, not its submounts).
func bindReadOnly(srcFD, dstFD int, what string) error {
	tree, err := unix.OpenTree(srcFD, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("bind %s: open_tree: %w", what, err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("bind %s: mount_setattr: %w", what, err)
	}
	if err := unix.MoveMount(tree, "", dstFD, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("bind %s: move_mount: %w", what, err)
	}
	return nil
}
