package auth

import (
	"fmt"
	"strings"
	"unicode"
)

// Login modules Kafka names in sasl.jaas.config.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// LoginModule is one entry of a JAAS configuration:
// `<class> <flag> key="value" ...;`.
type LoginModule struct {
	Class   string            // the login module class, e.g. PlainLoginModule
	Flag    string            // required, requisite, sufficient or optional
	Options map[string]string // the key=value options in order of appearance
}

// ParseJAAS parses a sasl.jaas.config value: one or more login modules, each ended by
// ';'. Values are bare tokens or double-quoted strings in which a backslash escapes the
// next character, as Kafka's JaasConfig reads them.
func ParseJAAS(s string) ([]LoginModule, error) {
	p := jaasParser{src: s}
	var out []LoginModule
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			break
		}
		class, err := p.token()
		if err != nil {
			return nil, err
		}
		flag, err := p.token()
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(flag) {
		case "required", "requisite", "sufficient", "optional":
		default:
			return nil, fmt.Errorf("%w: login module %s: flag %q is not required, requisite, sufficient or optional", ErrInvalidJAAS, class, flag)
		}
		m := LoginModule{Class: class, Flag: strings.ToLower(flag), Options: map[string]string{}}
		for {
			p.skipSpace()
			if p.pos >= len(p.src) {
				return nil, fmt.Errorf("%w: login module %s does not end with ';'", ErrInvalidJAAS, class)
			}
			if p.src[p.pos] == ';' {
				p.pos++
				break
			}
			key, err := p.token()
			if err != nil {
				return nil, err
			}
			p.skipSpace()
			if p.pos >= len(p.src) || p.src[p.pos] != '=' {
				return nil, fmt.Errorf("%w: option %q of %s has no '='", ErrInvalidJAAS, key, class)
			}
			p.pos++
			p.skipSpace()
			value, err := p.value()
			if err != nil {
				return nil, err
			}
			m.Options[key] = value
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no login module", ErrInvalidJAAS)
	}
	return out, nil
}

type jaasParser struct {
	src string
	pos int
}

func (p *jaasParser) skipSpace() {
	for p.pos < len(p.src) && unicode.IsSpace(rune(p.src[p.pos])) {
		p.pos++
	}
}

// token reads a bare word: letters, digits and . _ - $.
func (p *jaasParser) token() (string, error) {
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if unicode.IsSpace(rune(c)) || c == '=' || c == ';' || c == '"' {
			break
		}
		p.pos++
	}
	if p.pos == start {
		return "", fmt.Errorf("%w: expected a word at offset %d", ErrInvalidJAAS, start)
	}
	return p.src[start:p.pos], nil
}

// value reads a quoted string or a bare word.
func (p *jaasParser) value() (string, error) {
	if p.pos >= len(p.src) || p.src[p.pos] != '"' {
		return p.token()
	}
	p.pos++
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch c {
		case '\\':
			if p.pos+1 >= len(p.src) {
				return "", fmt.Errorf("%w: dangling backslash", ErrInvalidJAAS)
			}
			b.WriteByte(p.src[p.pos+1])
			p.pos += 2
		case '"':
			p.pos++
			return b.String(), nil
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", fmt.Errorf("%w: unterminated quoted value", ErrInvalidJAAS)
}

// PlainUsers returns the users of a PlainLoginModule configuration on the broker side:
// each option user_<name>="<password>".
func PlainUsers(modules []LoginModule) map[string]string {
	users := map[string]string{}
	for _, m := range modules {
		if m.Class != PlainLoginModule {
			continue
		}
		for k, v := range m.Options {
			if name, ok := strings.CutPrefix(k, "user_"); ok {
				users[name] = v
			}
		}
	}
	return users
}

// ClientCredentials returns the username and password options of the first Plain or
// Scram login module: a client's own credentials.
func ClientCredentials(modules []LoginModule) (username, password string, ok bool) {
	for _, m := range modules {
		if m.Class != PlainLoginModule && m.Class != ScramLoginModule {
			continue
		}
		u, uok := m.Options["username"]
		pw, pok := m.Options["password"]
		if uok && pok {
			return u, pw, true
		}
	}
	return "", "", false
}
