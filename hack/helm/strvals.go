package main

// --set and --set-string as Helm parses them (helm.sh/helm/v3 pkg/strvals/parser.go):
// `a.b=c,d[0].e=f,list={x,y}`, a backslash escapes the next character, and --set types
// true/false/null and integers (not those with a leading zero) while --set-string keeps text.

import (
	"fmt"
	"strconv"
	"strings"
)

type pathElem struct {
	key   string
	index int // >= 0 for a list index [N]
}

func parseInto(s string, dest map[string]interface{}, asString bool) error {
	r := []rune(s)
	i := 0
	for i < len(r) {
		path, next, err := parseKey(r, i)
		if err != nil {
			return err
		}
		i = next
		var value interface{}
		if i < len(r) && r[i] == '{' {
			list, next, err := parseList(r, i+1, asString)
			if err != nil {
				return err
			}
			value, i = list, next
		} else {
			text, next := readUntil(r, i, ',')
			value, i = typedVal(text, asString), next
		}
		if i < len(r) {
			if r[i] != ',' {
				return fmt.Errorf("key %q has unexpected %q after its value", describe(path), r[i])
			}
			i++
		}
		// dest is a non-nil map: setPath updates it in place.
		if _, err := setPath(dest, path, value); err != nil {
			return err
		}
	}
	return nil
}

func describe(path []pathElem) string {
	var b strings.Builder
	for i, p := range path {
		if p.index >= 0 {
			fmt.Fprintf(&b, "[%d]", p.index)
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.key)
	}
	return b.String()
}

// parseKey reads a key up to '=', returning its path and the position after '='.
func parseKey(r []rune, i int) ([]pathElem, int, error) {
	var path []pathElem
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			path = append(path, pathElem{key: cur.String(), index: -1})
			cur.Reset()
		}
	}
	for i < len(r) {
		c := r[i]
		switch {
		case c == '\\' && i+1 < len(r):
			cur.WriteRune(r[i+1])
			i += 2
			continue
		case c == '=':
			flush()
			if len(path) == 0 {
				return nil, 0, fmt.Errorf("key %q has no value", "")
			}
			return path, i + 1, nil
		case c == '.':
			flush()
		case c == '[':
			flush()
			end := strings.IndexRune(string(r[i:]), ']')
			if end < 0 {
				return nil, 0, fmt.Errorf("key %q has an unterminated index", string(r[:i]))
			}
			n, err := strconv.Atoi(string(r[i+1 : i+end]))
			if err != nil || n < 0 {
				return nil, 0, fmt.Errorf("failed to parse index: %s", string(r[i+1:i+end]))
			}
			path = append(path, pathElem{index: n})
			i += end
		case c == ',':
			flush()
			return nil, 0, fmt.Errorf("key %q has no value (cannot end with ,)", describe(path))
		default:
			cur.WriteRune(c)
		}
		i++
	}
	flush()
	return nil, 0, fmt.Errorf("key %q has no value", describe(path))
}

// readUntil reads to an unescaped stop rune, resolving escapes.
func readUntil(r []rune, i int, stop ...rune) (string, int) {
	var b strings.Builder
	for i < len(r) {
		c := r[i]
		if c == '\\' && i+1 < len(r) {
			b.WriteRune(r[i+1])
			i += 2
			continue
		}
		for _, s := range stop {
			if c == s {
				return b.String(), i
			}
		}
		b.WriteRune(c)
		i++
	}
	return b.String(), i
}

func parseList(r []rune, i int, asString bool) ([]interface{}, int, error) {
	list := []interface{}{}
	for {
		text, next := readUntil(r, i, ',', '}')
		if next >= len(r) {
			return nil, 0, fmt.Errorf("list must terminate with '}'")
		}
		if !(text == "" && r[next] == '}' && len(list) == 0) {
			list = append(list, typedVal(text, asString))
		}
		if r[next] == '}' {
			return list, next + 1, nil
		}
		i = next + 1
	}
}

func typedVal(s string, asString bool) interface{} {
	if asString {
		return s
	}
	switch {
	case strings.EqualFold(s, "true"):
		return true
	case strings.EqualFold(s, "false"):
		return false
	case strings.EqualFold(s, "null"):
		return nil
	case s == "0":
		return int64(0)
	}
	if s != "" && s[0] != '0' {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return s
}

// setPath sets value at path below node (a map or list, or nil), returning the new node.
func setPath(node interface{}, path []pathElem, value interface{}) (interface{}, error) {
	if len(path) == 0 {
		return value, nil
	}
	p := path[0]
	if p.index >= 0 {
		list, _ := node.([]interface{})
		if node != nil && list == nil {
			return nil, fmt.Errorf("%v is not a list", node)
		}
		for len(list) <= p.index {
			list = append(list, nil)
		}
		v, err := setPath(list[p.index], path[1:], value)
		if err != nil {
			return nil, err
		}
		list[p.index] = v
		return list, nil
	}
	m, _ := node.(map[string]interface{})
	if m == nil {
		m = map[string]interface{}{}
	}
	v, err := setPath(m[p.key], path[1:], value)
	if err != nil {
		return nil, err
	}
	m[p.key] = v
	return m, nil
}
