package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	// operationStart is the start of a GraphQL document of an operation.
	operationStart = regexp.MustCompile(`^\s*(query|mutation|subscription)(\s*[({]|\s+[_A-Za-z][_0-9A-Za-z]*\s*[({]|\s+%s\(|\s+$)`)
	// namedOperation is one that names itself, or whose name follows the literal (a `%s` of
	// fmt.Sprintf, or a concatenation after "mutation ").
	namedOperation = regexp.MustCompile(`^\s*(query|mutation|subscription)(\s+[_A-Za-z][_0-9A-Za-z]*\s*[({]|\s+%s\(|\s+$)`)
)

// TestCLIDocumentsAreNamed: every GraphQL document the CLI sends names its operation
// (`mutation StartJob(...)`), so that the server's spans, logs and metrics tell them apart.
// The check reads the package's source: each string literal that starts an operation.
func TestCLIDocumentsAreNamed(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			text, err := strconv.Unquote(lit.Value)
			if err != nil || !operationStart.MatchString(text) {
				return true
			}
			seen++
			if !namedOperation.MatchString(text) {
				t.Errorf("%s: an unnamed operation: %.60q", fset.Position(lit.Pos()), text)
			}
			return true
		})
	}
	if seen < 20 {
		t.Errorf("found %d operations in the CLI's source; want them all (20 or more)", seen)
	}
	// The check must be able to fail.
	for doc, named := range map[string]bool{
		"mutation($in: X!) { x }": false, "query { jobs }": false, "mutation StartJob($in: X!) { x }": true,
		"query Jobs { jobs }": true, "mutation %s($in: X!)": true, "mutation ": true,
	} {
		if namedOperation.MatchString(doc) != named {
			t.Errorf("%q named = %v; want %v", doc, !named, named)
		}
	}
}
