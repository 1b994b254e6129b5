package linkemu

// tunPort is a Port on a non-blocking TUN fd, through raw system calls
// (rawRead, rawWrite, writev2): no allocation, no hand-over of the thread.
type tunPort struct{ fd int }

// Read reads one packet: a TUN device gives one per read(2).
func (p tunPort) Read(bufs [][]byte, sizes []int) (int, error) {
	n, err := rawRead(p.fd, bufs[0])
	if err != nil {
		return 0, err
	}
	sizes[0] = n
	return 1, nil
}

// Write writes each packet with one system call: a piece's headers and
// payload together with writev(2).
func (p tunPort) Write(heads, payloads [][]byte) (int, error) {
	for i, head := range heads {
		var err error
		if len(payloads[i]) == 0 {
			err = rawWrite(p.fd, head)
		} else {
			err = writev2(p.fd, head, payloads[i])
		}
		if err != nil {
			return i, err
		}
	}
	return len(heads), nil
}
