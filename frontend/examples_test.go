package frontend

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

const examplesFile = "src/pages/playground-examples.graphql"

var queriesBlock = regexp.MustCompile("(?s)<!-- queries:begin frontend/" + regexp.QuoteMeta(examplesFile) + " -->\n```graphql\n(.*?)```\n<!-- queries:end -->")

// TestReadmeExampleQueries: the README's example operations are the playground's, exactly, and
// each is valid against the server's schema, with the operations a new user wants first: list
// the jobs, start one, watch a run.
func TestReadmeExampleQueries(t *testing.T) {
	t.Parallel()
	examples, err := os.ReadFile(examplesFile)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := queriesBlock.FindSubmatch(readme)
	if m == nil {
		t.Fatalf("README has no block of %s between <!-- queries:begin --> and <!-- queries:end -->", examplesFile)
	}
	if string(m[1]) != string(examples) {
		t.Errorf("README's example queries differ from %s; copy the file into the block", examplesFile)
	}

	files, err := filepath.Glob("../graph/*.graphqls")
	if err != nil || len(files) == 0 {
		t.Fatalf("schema files: %v (%d)", err, len(files))
	}
	var sources []*ast.Source
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, &ast.Source{Name: f, Input: string(b)})
	}
	schema, gerr := gqlparser.LoadSchema(sources...)
	if gerr != nil {
		t.Fatalf("load schema: %v", gerr)
	}
	doc, errs := gqlparser.LoadQuery(schema, string(examples))
	if len(errs) > 0 {
		t.Fatalf("%s against the schema: %v", examplesFile, errs)
	}
	var got []string
	for _, op := range doc.Operations {
		got = append(got, string(op.Operation)+" "+op.Name)
	}
	want := []string{"query ListJobs", "mutation StartJob", "subscription WatchRun"}
	if len(got) != len(want) {
		t.Fatalf("operations %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("operations %v, want %v", got, want)
		}
	}
}
