package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/monitor/tokens"
)

func newTokenCmd() *cobra.Command {
	var file string
	c := &cobra.Command{
		Use:   "token NAME --file FILE",
		Short: "Make a token that lets NAME act on wanlab serve's dashboard and API",
		Long: `Make a random token for NAME, add the line that admits it to FILE (wanlab serve's
access: tokens: file, created 0600 if missing) and print the token, once: the file keeps
only its SHA-256. With the token, as "Authorization: Bearer TOKEN" or signed in on the
dashboard, NAME may acknowledge alerts and start tests on demand; every such action is
audited under NAME (GET /api/v1/audit). wanlab serve reads the file again on SIGHUP.`,
		Example: `  wanlab token alice --file /etc/wanlab/dashboard-tokens`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if file == "" {
				return usagef("give --file FILE, the tokens file of wanlab serve's access: tokens:")
			}
			token, line, err := tokens.New(a[0])
			if err != nil {
				return usageError{err}
			}
			if _, err := os.Stat(file); err == nil {
				if _, err := tokens.Load(file); err != nil {
					return fmt.Errorf("not adding to a broken tokens file: %w", err)
				}
			}
			f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return fmt.Errorf("the tokens file: %w", err)
			}
			if _, err := fmt.Fprintln(f, line); err != nil {
				f.Close()
				return fmt.Errorf("writing %s: %w", file, err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("writing %s: %w", file, err)
			}
			fmt.Fprintln(c.OutOrStdout(), token)
			fmt.Fprintf(c.ErrOrStderr(), "%s may act with this token; it is shown once (%s keeps its SHA-256 only)\n", a[0], file)
			return nil
		},
	}
	c.Flags().StringVar(&file, "file", "", "the tokens file (access: tokens: of the monitoring configuration)")
	return c
}
