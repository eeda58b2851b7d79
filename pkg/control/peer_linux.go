package control

import "golang.org/x/sys/unix"

// peerCred is the uid the kernel recorded for the peer when it connected
// (SO_PEERCRED): the client cannot claim another.
func peerCred(fd int) (int, error) {
	c, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(c.Uid), nil
}
