//go:build !linux

package rpc

import "net"

// sendfileSupported says whether sendFile exists on this platform.
const sendfileSupported = false

func sendFile(*net.TCPConn, FileSection) error { panic("rpc: sendfile is Linux-only") }

func sendMore(*net.TCPConn, []byte) error { panic("rpc: sendmsg with MSG_MORE is Linux-only") }
