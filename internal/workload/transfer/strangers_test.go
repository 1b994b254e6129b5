package transfer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// TestStrangersDoNotBreakATransfer: silent strangers filling a receiver's
// port cost the transfer nothing: its streams still get in.
func TestStrangersDoNotBreakATransfer(t *testing.T) {
	spec := Spec{Streams: 2, Block: 64 << 10}
	src, dst := newFile(t, "src"), newFile(t, "dst")
	data := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{}).Read(data)
	if _, err := src.Write(data); err != nil {
		t.Fatal(err)
	}
	r, err := Listen(spec, bind.Local{Addr: "127.0.0.1"}, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := r.Run(ctx, dst)
		done <- outcome{res, err}
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", r.Port)
	const n = token.Margin + 36
	testsupport.DialStrangersFrom(t, addr, "127.0.0.2", n).WaitClosed(t, n-token.Margin)
	sent, err := Send(ctx, spec, src, addr, r.Token)
	if err != nil {
		t.Fatalf("sending with %d strangers connected: %v", n, err)
	}
	recv := <-done
	if recv.err != nil || recv.res.SHA256 != sent.SHA256 {
		t.Errorf("receiving with %d strangers connected: %v (checksums %s, sent %s)", n, recv.err, recv.res.SHA256, sent.SHA256)
	}
}
