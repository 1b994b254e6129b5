// Package cli implements wanlab's command line: verbs, flags, exit codes and
// the human and JSON views of results.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/scenario"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=...".
var Version = "dev"

// usageError marks an error in how wanlab was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitError carries a specific exit status chosen by a verb.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// Main runs wanlab with args and returns the process exit status.
func Main(args []string) int {
	return run(args, os.Stdout, os.Stderr)
}

func run(args []string, stdout, stderr io.Writer) int {
	stdout, stderr = newSafeText(stdout), newSafeText(stderr)
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	ctx, stop := interruptible()
	defer stop()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "wanlab: %v\n", err)
	var ee exitError
	var se *scenario.Error
	var ue usageError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &se), errors.As(err, &ue):
		return exitUsage
	}
	return exitFailure
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "wanlab",
		Short: "A network performance lab for data-intensive distributed computing",
		Long: `wanlab builds emulated test-beds on one Linux machine (hosts in network namespaces,
links with rate, delay, jitter, loss and queues) and runs measurements across them.`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	root.AddCommand(newTestbedCmd(), newMeasureCmd(), newAgentCmd(), newPKICmd(), newHostsCmd(), newRunCmd(), newPredictCmd(), newServeCmd(), newCostCmd(), newUICmd(), newTokenCmd(), newAnalyzeCmd(), newReportCmd(), newImportCmd(), newScenariosCmd(), newRunsCmd(), newExportCmd(), newWatchCmd(), newTwinCmd(), newVersionCmd())
	refuseUnknownVerbs(root)
	return root
}

// refuseUnknownVerbs makes every command that groups verbs print its help
// when called alone (or do its own work, as scenarios lists), and refuse
// an unknown verb as a usage error (exit 2), where cobra would print the
// help and succeed.
func refuseUnknownVerbs(c *cobra.Command) {
	if !c.HasSubCommands() {
		return
	}
	own := c.RunE
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, a []string) error {
		if len(a) == 0 && own != nil {
			return own(c, a)
		}
		if len(a) == 0 {
			return c.Help()
		}
		var verbs []string
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				verbs = append(verbs, sub.Name())
			}
		}
		return usagef("unknown verb %q for %s: give one of %s (see %s --help)", a[0], c.CommandPath(), strings.Join(verbs, ", "), c.CommandPath())
	}
	for _, sub := range c.Commands() {
		refuseUnknownVerbs(sub)
	}
}

// interruptible returns a context that the first Ctrl-C, SIGTERM or hang-up
// (the terminal of a long run closed) cancels, with the signal as its
// cause: every verb's work stops cleanly on it. A verb that reloads on
// SIGHUP (the agent) sets hangupReloads, and a hang-up then ends nothing.
func interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			if s == syscall.SIGHUP && hangupReloads.Load() {
				continue
			}
			cancel(fmt.Errorf("%v received", s))
			return
		}
	}()
	return ctx, func() { signal.Stop(sigs); close(sigs); cancel(nil) }
}

// hangupReloads says SIGHUP reloads the running verb's files.
var hangupReloads atomic.Bool

// args wraps a cobra argument check so that its failure is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		if err := check(c, a); err != nil {
			return usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
		}
		return nil
	}
}

// versionView is what wanlab version --json prints.
type versionView struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print wanlab's version, as wanlab --version does",
		Long: `Print wanlab's version: the git description it was built from (make build), or dev.
With --json, also the Go release it was built with and the platform.`,
		Example: "  wanlab version\n  wanlab version --json",
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			if asJSON {
				return writeJSON(c.OutOrStdout(), versionView{Version: Version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH})
			}
			_, err := fmt.Fprintf(c.OutOrStdout(), "wanlab version %s\n", Version)
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON, with the Go release and platform")
	return c
}
