package rpc

import (
	"fmt"
	"io"
	"net"
	"testing"
)

// BenchmarkWritePartsCopied writes frames of many small sections (a fetch answer of
// many partitions with little data each, below sendfileMinBytes) through the copying
// path, over loopback TCP. Count its system calls with strace -c -f on the test binary.
func BenchmarkWritePartsCopied(b *testing.B) {
	for _, sections := range []int{6, 64} {
		b.Run(fmt.Sprintf("sections=%d", sections), func(b *testing.B) {
			f, _ := sectionFile(b, 4<<20)
			p := &Parts{}
			for i := range sections {
				p.B = append(p.B, make([]byte, 40)...) // a partition's fields
				p.AddSection(FileSection{f, int64(i) * 16 << 10, 16 << 10})
			}
			p.B = append(p.B, 0, 0, 0)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
			}()
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			b.SetBytes(p.Len())
			b.ReportAllocs()
			for b.Loop() {
				if err := writeParts(nc, p); err != nil { // 16 KiB sections: copied
					b.Fatal(err)
				}
			}
		})
	}
}
