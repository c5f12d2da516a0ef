package broker

import "github.com/twmb/franz-go/pkg/kbin"

// boundedArrayLen reads an array length of one of Petrel's internal APIs (keys 10000
// and up, decoded by hand) and reports whether the bytes left can hold it at minBytes
// an element: a malformed count is refused before anything is allocated for it, so a
// request's decoding stays bounded by its size.
func boundedArrayLen(rd *kbin.Reader, minBytes int) (int, bool) {
	n := rd.ArrayLen()
	return int(n), rd.Ok() && n >= 0 && int(n) <= len(rd.Src)/minBytes
}
