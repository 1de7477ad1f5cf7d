package main

import (
	"os"
	"regexp"
	"testing"
)

// exampleBlock is a README block that shows a file: its path and its code.
var exampleBlock = regexp.MustCompile("(?s)<!-- example:begin (\\S+) -->\n```go\n(.*?)```\n<!-- example:end -->")

// TestReadmeShowsTheExample: the README's "Write your own job" shows this program's files,
// each exactly as it is, so that what the README shows is what CI builds and runs.
func TestReadmeShowsTheExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, m := range exampleBlock.FindAllStringSubmatch(string(readme), -1) {
		path, code := m[1], m[2]
		file, err := os.ReadFile("../../" + path)
		if err != nil {
			t.Errorf("README shows %s: %v", path, err)
			continue
		}
		if code != string(file) {
			t.Errorf("README's block of %s differs from the file; copy the file into it", path)
		}
		shown[path] = true
	}
	for _, path := range []string{"examples/embed/job.go", "examples/embed/main.go"} {
		if !shown[path] {
			t.Errorf("README shows no block of %s", path)
		}
	}
}
