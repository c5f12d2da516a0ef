package segment

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestDefaultMinFreeBytes(t *testing.T) {
	for _, c := range []struct{ size, want int64 }{
		{0, 0},
		{16 << 20, 16 << 20 / 100},             // 1 % of a small file system
		{10 << 30, 10 << 30 / 100},             // 1 % of 10 GiB: 102 MiB
		{25600 << 20, 256 << 20},               // 1 % of 25 GiB is exactly 256 MiB
		{1 << 40, 256 << 20},                   // 256 MiB at most
		{int64(1) << 50, 256 << 20},            // however large
		{100, 1},                               // tiny
		{99, 0},                                // rounds down
		{(256 << 20) * 100, 256 << 20},         // the boundary
		{(256<<20)*100 - 100, (256 << 20) - 1}, // just below it
	} {
		if got := DefaultMinFreeBytes(c.size); got != c.want {
			t.Errorf("DefaultMinFreeBytes(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}

// fakeStatfs is a file system whose free and total bytes the test sets.
type fakeStatfs struct {
	free, size atomic.Int64
	err        atomic.Pointer[error]
	calls      atomic.Int64
}

func (f *fakeStatfs) statfs(string) (int64, int64, error) {
	f.calls.Add(1)
	if p := f.err.Load(); p != nil {
		return -1, -1, *p
	}
	return f.free.Load(), f.size.Load(), nil
}

func TestDirSpace_BelowFloor(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, c := range []struct {
		name       string
		property   int64
		free, size int64
		statErr    error
		below      bool
	}{
		{"default rule, plenty", -1, 1 << 30, 100 << 30, nil, false},
		{"default rule, below 256 MiB", -1, 255 << 20, 100 << 30, nil, true},
		{"default rule, 1 % of a small file system", -1, 150 << 10, 16 << 20, nil, true},
		{"default rule, just above 1 %", -1, 200 << 10, 16 << 20, nil, false},
		{"explicit floor", 1 << 20, 1<<20 - 1, 1 << 30, nil, true},
		{"explicit floor reached exactly", 1 << 20, 1 << 20, 1 << 30, nil, false},
		{"off", 0, 0, 1 << 30, nil, false},
		{"statfs fails", -1, 0, 0, errors.New("EIO"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewDirSpace("unused", c.property)
			fs := &fakeStatfs{}
			fs.free.Store(c.free)
			fs.size.Store(c.size)
			if c.statErr != nil {
				fs.err.Store(&c.statErr)
			}
			s.SetStatfs(fs.statfs)
			if free, floor, below := s.BelowFloor(now); below != c.below {
				t.Fatalf("BelowFloor = %d free, floor %d, below %v; want below %v", free, floor, below, c.below)
			}
		})
	}
}

// TestDirSpace_ReadsAtMostEveryInterval: Produce costs an atomic load; the file
// system is asked again only once the last reading is DirSpaceInterval old.
func TestDirSpace_ReadsAtMostEveryInterval(t *testing.T) {
	s := NewDirSpace("unused", 1<<20)
	fs := &fakeStatfs{}
	fs.free.Store(2 << 20)
	fs.size.Store(1 << 30)
	s.SetStatfs(fs.statfs)
	now := time.Unix(1000, 0)
	for i := range 100 {
		if _, _, below := s.BelowFloor(now.Add(time.Duration(i) * time.Millisecond / 2)); below {
			t.Fatal("below the floor with plenty free")
		}
	}
	if n := fs.calls.Load(); n != 1 {
		t.Fatalf("%d statfs calls within %s, want 1", n, DirSpaceInterval)
	}
	fs.free.Store(1 << 10)
	if _, _, below := s.BelowFloor(now.Add(DirSpaceInterval / 2)); below {
		t.Fatal("a reading younger than the interval was not used")
	}
	if _, _, below := s.BelowFloor(now.Add(DirSpaceInterval)); !below {
		t.Fatal("a reading as old as the interval was used")
	}
}
