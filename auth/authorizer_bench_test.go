package auth

import (
	"fmt"
	"testing"
)

// BenchmarkAuthorize: one decision over 1,000 literal topic ACLs (one per topic, 10
// principals) and 100 prefixed ones, the shape of a busy cluster. Run with
//
//	go test -run XXX -bench Authorize ./auth/
func BenchmarkAuthorize(b *testing.B) {
	var acls []ACL
	for i := range 1000 {
		acls = append(acls, allow(fmt.Sprintf("User:u%d", i%10), OpRead, ResourceTopic, fmt.Sprintf("topic-%d", i), PatternLiteral))
	}
	for i := range 100 {
		acls = append(acls, allow(fmt.Sprintf("User:u%d", i%10), OpWrite, ResourceTopic, fmt.Sprintf("team-%d-", i), PatternPrefixed))
	}
	a := NewAuthorizer(AuthorizerConfig{}, acls)
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("topic-%d", 3+10*i)
	}
	b.ResetTimer()
	for i := range b.N {
		if !a.Authorize("User:u3", "10.0.0.1", OpRead, ResourceTopic, names[i%len(names)]) {
			b.Fatal("refused")
		}
	}
}
