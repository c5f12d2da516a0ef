//go:build !unix

package rpc

import "net"

// directWriteSupported says whether tryWrite exists on this platform.
const directWriteSupported = false

func tryWrite(tc *net.TCPConn, b []byte) (int, error) { return 0, nil }
