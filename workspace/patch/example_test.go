package patch_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/harness-runtime/harness/workspace/patch"
)

// A model's hunk with wrong line numbers and stripped trailing whitespace
// still applies, and the result says how it was placed.
func ExampleApply() {
	file := []byte("package demo\n\nfunc A() int {\n\treturn 1\n}\n")
	p, err := patch.Parse("--- a/demo.go\n+++ b/demo.go\n@@ -40,3 +40,3 @@\n func A() int {\n-\treturn 1\n+\treturn 2\n }\n")
	if err != nil {
		panic(err)
	}
	r, err := patch.Apply(file, p.Files[0].Hunks, patch.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s stage=%s line=%d offset=%d\n", p.Format, r.Stage, r.Hunks[0].Line, r.Hunks[0].Offset)
	fmt.Print(string(r.Content))
	// Output:
	// unified stage=offset line=3 offset=-37
	// package demo
	//
	// func A() int {
	// 	return 2
	// }
}

// A hunk whose lines occur twice is refused rather than guessed.
func ExampleApply_ambiguous() {
	file := []byte("x := 1\ny := 2\n\nx := 1\ny := 2\n")
	p, _ := patch.Parse("@@ -1,2 +1,2 @@\n x := 1\n-y := 2\n+y := 3\n")
	_, err := patch.Apply(file, p.Files[0].Hunks, patch.Options{})
	fmt.Println(errors.Is(err, patch.ErrAmbiguous))
	fmt.Println(err)
	// Output:
	// true
	// hunk 1 (@@ -1,2 +1,2 @@) is ambiguous: its lines match at lines 1, 4; add context lines that tell them apart
}

func ExampleDiff() {
	fmt.Print(patch.Diff("greeting.txt", "greeting.txt", []byte("hello\nworld\n"), []byte("hello\nthere\n")))
	// Output:
	// --- a/greeting.txt
	// +++ b/greeting.txt
	// @@ -1,2 +1,2 @@
	//  hello
	// -world
	// +there
}

// One Work bounds every call a request makes: its limit is the allowance
// of the patch text, raised by the allowance of each file the request
// reads; past it a call stops with ErrTooCostly, and any call stops when
// its context is done.
func ExampleWork() {
	ctx := context.Background()
	text := "--- a/demo.go\n+++ b/demo.go\n@@ -3,3 +3,3 @@\n func A() int {\n-\treturn 1\n+\treturn 2\n }\n"
	w := patch.NewWork(patch.WorkAllowance(len(text)))
	p, err := patch.ParseContext(ctx, text, w)
	if err != nil {
		panic(err)
	}
	file := []byte("package demo\n\nfunc A() int {\n\treturn 1\n}\n")
	w.Allow(len(file))
	r, err := patch.ApplyContext(ctx, file, p.Files[0].Hunks, patch.Options{Work: w})
	if err != nil {
		panic(err)
	}
	fmt.Println(w.Ops() > 0 && w.Ops() <= w.Limit())
	fmt.Print(string(r.Content))
	// Output:
	// true
	// package demo
	//
	// func A() int {
	// 	return 2
	// }
}
