package metadata

import "fmt"

// MaxTopicNameLength is Kafka's limit on topic names.
const MaxTopicNameLength = 249

// ValidateTopicName applies Kafka's rules: 1-249 characters of [a-zA-Z0-9._-], not "."
// or "..".
func ValidateTopicName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: the name is empty", ErrInvalidTopic)
	}
	if name == "." || name == ".." {
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopic, name)
	}
	if len(name) > MaxTopicNameLength {
		return fmt.Errorf("%w: %d characters, the limit is %d", ErrInvalidTopic, len(name), MaxTopicNameLength)
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q contains %q; legal characters are [a-zA-Z0-9._-]", ErrInvalidTopic, name, c)
		}
	}
	return nil
}

// CollidingTopicName returns the name that collides with name once '.' and '_' are
// treated alike (Kafka refuses such pairs because metric names merge them).
func CollidingTopicName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if c == '.' {
			b[i] = '_'
		}
	}
	return string(b)
}
