package broker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/replication"
	"github.com/twmb/franz-go/pkg/kerr"
)

// errorsNeverAnswered are the exported sentinels that never reach a response, each
// with the reason; every other exported Err* of the packages whose errors the broker
// answers with must be in errorTable.
var errorsNeverAnswered = map[string]string{
	"replication.ErrISRChangeNotAttempted": "AlterPartition's outcome inside the leader (replication/leader.go retries)",
	"replication.ErrISRChangeRejected":     "AlterPartition's outcome inside the leader (replication/leader.go gives up)",
	"segment.ErrCleanAborted":              "the cleaner's own pass, retried later",
	"segment.ErrCorruptTxnIndex":           "rebuilt from the log when the producer state loads",
	"compress.ErrTooLarge":                 "the same value as segment.ErrRecordsTooLarge",
	"broker.ErrQuorumMembership":           "a start refused (raft_membership.go), never a request's answer",
}

// errorPackages are the packages whose errors handlers pass to errorCode. rpc's are
// the connection's (it closes), group's and txn's are their coordinators' (mapped in
// group/ and txn/ to the codes their protocols define).
var errorPackages = []string{"auth", "compress", "config", "controller", "coordinator", "metadata", "replication", "segment", "broker"}

// Every exported error sentinel maps to a Kafka code in errorTable, or is listed in
// errorsNeverAnswered with why: a new sentinel cannot reach the wire as
// UNKNOWN_SERVER_ERROR by being forgotten.
func TestEveryErrorSentinelMapsToAKafkaCode(t *testing.T) {
	fset := token.NewFileSet()
	table := map[string]bool{} // "pkg.ErrX" as errors.go's table names them
	f, err := parser.ParseFile(fset, "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if cl, ok := n.(*ast.CompositeLit); ok && len(cl.Elts) == 2 {
			switch e := cl.Elts[0].(type) {
			case *ast.SelectorExpr:
				table[e.X.(*ast.Ident).Name+"."+e.Sel.Name] = true
			case *ast.Ident:
				table["broker."+e.Name] = true
			}
		}
		return true
	})
	found := 0
	for _, pkg := range errorPackages {
		dir := filepath.Join("..", pkg)
		if pkg == "broker" {
			dir = "."
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				for _, spec := range gd.Specs {
					for _, name := range spec.(*ast.ValueSpec).Names {
						if !strings.HasPrefix(name.Name, "Err") || !name.IsExported() {
							continue
						}
						found++
						full := pkg + "." + name.Name
						if !table[full] && errorsNeverAnswered[full] == "" {
							t.Errorf("%s (%s) has no Kafka code in errorTable and no reason in errorsNeverAnswered", full, fset.Position(name.Pos()))
						}
					}
				}
			}
		}
	}
	if found < 40 {
		t.Fatalf("found only %d sentinels: the parse is broken", found)
	}
	for _, e := range errorTable {
		if e.code == kerr.UnknownServerError.Code && e.err != controller.ErrProducerIDsExhausted {
			t.Errorf("%v maps to UNKNOWN_SERVER_ERROR", e.err)
		}
	}
}

// Every acks=all outcome maps to the code a produce or WriteTxnMarkers partition answers
// with: none while waiting, 0 once committed, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
// ISR shrank while waiting, NOT_LEADER_OR_FOLLOWER when leadership moved,
// KAFKA_STORAGE_ERROR when the log failed first, REQUEST_TIMED_OUT when the wait ended
// short of the high watermark.
func TestAcksAllCode(t *testing.T) {
	for o, want := range map[replication.Outcome]struct {
		code    int16
		decided bool
	}{
		replication.OutcomeWaiting:                      {0, false},
		replication.OutcomeCommitted:                    {0, true},
		replication.OutcomeNotEnoughReplicasAfterAppend: {kerr.NotEnoughReplicasAfterAppend.Code, true},
		replication.OutcomeNotLeader:                    {kerr.NotLeaderForPartition.Code, true},
		replication.OutcomeTimedOut:                     {kerr.RequestTimedOut.Code, true},
		replication.OutcomeStorageError:                 {kerr.KafkaStorageError.Code, true},
	} {
		if code, decided := acksAllCode(o); code != want.code || decided != want.decided {
			t.Errorf("%v: (%d, %v), want (%d, %v)", o, code, decided, want.code, want.decided)
		}
	}
}
