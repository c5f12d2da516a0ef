package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// fileMap is the file that maps every non-test .go file (DESIGN.md links to it).
const fileMap = "FILEMAP.md"

// maxRowText bounds a row's description: a row says what a file owns, not its history.
const maxRowText = 110

// mapRow is one row of the file map.
type mapRow struct {
	dir, file, text string
	line            int
}

// parseFileMap reads the map's rows: a directory's heading (dirHeading) starts its table;
// each following table row whose first cell is a name in backticks is one file of that
// directory. Other headings and tables are ignored, so the map may share a page.
func parseFileMap(path string) ([]mapRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []mapRow
	dir, inDir := "", false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			name, ok := dirHeading(line)
			dir, inDir = name, ok
			continue
		}
		if !inDir || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.SplitN(line, " | ", 2)
		name, _ := backticked(cells[0])
		text := ""
		if len(cells) == 2 {
			text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(cells[1]), "|"))
		}
		rows = append(rows, mapRow{dir: dir, file: name, text: text, line: n})
	}
	return rows, sc.Err()
}

// dirHeading reports whether line is a directory's heading, "### `dir/`" ("### `./`" for
// the module root), and returns the directory; any other heading ends a directory's table.
func dirHeading(line string) (string, bool) {
	h, ok := strings.CutPrefix(line, "### `")
	if !ok || !strings.HasSuffix(h, "/`") || strings.Count(h, "`") != 1 {
		return "", false
	}
	name := strings.TrimSuffix(h, "/`")
	if name == "." {
		name = ""
	}
	return name, true
}

// backticked returns the text between the first pair of backticks in s.
func backticked(s string) (string, bool) {
	_, rest, ok := strings.Cut(s, "`")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, "`")
	return name, ok && name != ""
}

// goFiles lists every non-test .go file under the module root by directory, skipping
// hidden directories and testdata.
func goFiles(root string) (map[string][]string, error) {
	files := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if dir == "." {
			dir = ""
		}
		files[dir] = append(files[dir], filepath.Base(rel))
		return nil
	})
	return files, err
}

func heading(dir string) string {
	if dir == "" {
		return "### `./`"
	}
	return "### `" + dir + "/`"
}

// TestDesignMapListsEveryFile: FILEMAP.md has exactly one row per non-test .go file,
// each table sorted, each row short. The failure lists the rows to add and remove.
func TestDesignMapListsEveryFile(t *testing.T) {
	problems, err := checkFileMap(fileMap, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Errorf("%s does not match the tree:\n%s", fileMap, strings.Join(problems, "\n"))
	}
}

// checkFileMap compares the map at path with the .go files under root and returns what
// to change, one instruction per problem.
func checkFileMap(path, root string) ([]string, error) {
	rows, err := parseFileMap(path)
	if err != nil {
		return nil, err
	}
	files, err := goFiles(root)
	if err != nil {
		return nil, err
	}
	exists := map[string]bool{}
	for dir, names := range files {
		for _, n := range names {
			exists[dir+"/"+n] = true
		}
	}
	mapped := map[string]bool{}
	var problems []string
	byDir := map[string][]mapRow{}
	for _, r := range rows {
		key := r.dir + "/" + r.file
		switch {
		case mapped[key]:
			problems = append(problems, fmt.Sprintf("line %d: remove the second row of `%s` under %s", r.line, r.file, heading(r.dir)))
		case !exists[key]:
			problems = append(problems, fmt.Sprintf("line %d: remove `%s` under %s: no such file", r.line, r.file, heading(r.dir)))
		}
		mapped[key] = true
		if r.text == "" {
			problems = append(problems, fmt.Sprintf("line %d: `%s` says nothing about what the file owns", r.line, r.file))
		} else if n := utf8.RuneCountInString(r.text); n > maxRowText {
			problems = append(problems, fmt.Sprintf("line %d: `%s`'s row is %d characters; keep it under %d", r.line, r.file, n, maxRowText))
		}
		byDir[r.dir] = append(byDir[r.dir], r)
	}
	var unsorted []string
	for dir, rs := range byDir {
		if !slices.IsSortedFunc(rs, func(a, b mapRow) int { return strings.Compare(a.file, b.file) }) {
			unsorted = append(unsorted, fmt.Sprintf("line %d: sort the rows under %s by file name", rs[0].line, heading(dir)))
		}
	}
	slices.Sort(unsorted)
	problems = append(problems, unsorted...)
	dirs := make([]string, 0, len(files))
	for dir := range files {
		dirs = append(dirs, dir)
	}
	slices.Sort(dirs)
	for _, dir := range dirs {
		var add []string
		names := files[dir]
		slices.Sort(names)
		for _, n := range names {
			if !mapped[dir+"/"+n] {
				add = append(add, fmt.Sprintf("    | `%s` | <what it owns> |", n))
			}
		}
		if len(add) == 0 {
			continue
		}
		where := "under " + heading(dir)
		if len(byDir[dir]) == 0 {
			where = "in a new section " + heading(dir) + " (a table: | file | owns |)"
		}
		problems = append(problems, fmt.Sprintf("add %s:\n%s", where, strings.Join(add, "\n")))
	}
	return problems, nil
}

// TestDesignMapCatchesDrift runs the check on a small tree of its own: a file without a
// row, a row without a file, a new directory and an unsorted table are each reported,
// and test files, hidden directories and rows outside a directory's table are ignored.
func TestDesignMapCatchesDrift(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"main.go", "a/x.go", "a/x_test.go", "a/y.go", "b/z.go", ".git/hidden.go"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package p\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md := filepath.Join(root, "map.md")
	doc := "# map\n\n### `./`\n\n| file | owns |\n|---|---|\n| `main.go` | the command \\| pipes |\n\n" +
		"### `a/`\n\n| file | owns |\n|---|---|\n| `x.go` | x |\n| `gone.go` | removed long ago |\n\n" +
		"### The edge (`a/`)\n\n| `y.go` | not a row of a/ |\n"
	if err := os.WriteFile(md, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := checkFileMap(md, root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"line 14: remove `gone.go` under ### `a/`: no such file",
		"line 13: sort the rows under ### `a/` by file name",
		"add under ### `a/`:\n    | `y.go` | <what it owns> |",
		"add in a new section ### `b/` (a table: | file | owns |):\n    | `z.go` | <what it owns> |",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
