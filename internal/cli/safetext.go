package cli

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// safeText writes text to a terminal or log with every control character
// but newline and tab made visible (\x1b, \u009b): what wanlab prints
// comes from archives, imported files and peers, and must not be able to
// move the cursor, retitle a window or hide a line. JSON output passes
// unchanged, since its encoder already escapes what is below 0x20 and the
// escapes this writes for C1 characters are valid JSON string escapes.
type safeText struct {
	w     io.Writer
	carry []byte // the start of a UTF-8 sequence split across writes
}

func newSafeText(w io.Writer) *safeText { return &safeText{w: w} }

func (s *safeText) Write(p []byte) (int, error) {
	in := p
	if len(s.carry) > 0 {
		in = append(s.carry, p...)
		s.carry = nil
	}
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		r, size := utf8.DecodeRune(in[i:])
		if r == utf8.RuneError && size <= 1 && !utf8.FullRune(in[i:]) {
			s.carry = append([]byte(nil), in[i:]...) // wait for the rest
			break
		}
		switch {
		case r == utf8.RuneError && size == 1:
			out = fmt.Appendf(out, `\x%02x`, in[i])
		case r == '\n' || r == '\t':
			out = append(out, byte(r))
		case r < 0x20 || r == 0x7f:
			out = fmt.Appendf(out, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, in[i:i+size]...)
		}
		i += size
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// rawWriter is the writer under a safeText, for a progress bar that draws
// with control characters of its own.
func rawWriter(w io.Writer) io.Writer {
	if s, ok := w.(*safeText); ok {
		return s.w
	}
	return w
}
