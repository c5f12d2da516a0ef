package broker

import "github.com/hashicorp/go-hclog"

// replicaLogger is a replica's logger: the shared "partition" logger with the topic and
// partition added to each line as it is written. hclog's With would copy the logger per
// replica (about 280 bytes of heap each, most of an idle replica's cost at 100,000).
// Only the logging methods add the fields; the rest are the shared logger's.
type replicaLogger struct {
	hclog.Logger
	topic     string
	partition int32
}

func (l *replicaLogger) args(args []any) []any {
	return append([]any{"topic", l.topic, "partition", l.partition}, args...)
}

func (l *replicaLogger) Log(level hclog.Level, msg string, args ...any) {
	l.Logger.Log(level, msg, l.args(args)...)
}
func (l *replicaLogger) Trace(msg string, args ...any) { l.Logger.Trace(msg, l.args(args)...) }
func (l *replicaLogger) Debug(msg string, args ...any) { l.Logger.Debug(msg, l.args(args)...) }
func (l *replicaLogger) Info(msg string, args ...any)  { l.Logger.Info(msg, l.args(args)...) }
func (l *replicaLogger) Warn(msg string, args ...any)  { l.Logger.Warn(msg, l.args(args)...) }
func (l *replicaLogger) Error(msg string, args ...any) { l.Logger.Error(msg, l.args(args)...) }
