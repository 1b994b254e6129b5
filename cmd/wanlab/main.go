// Command wanlab is a network performance lab for data-intensive distributed
// computing: it builds emulated test-beds and measures what runs across them.
package main

import (
	"os"

	"github.com/wanlab/wanlab/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
