package testenv

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// skippedDirs are directories CheckSizes never enters: they hold no code of the module's own
// or only generated code.
var skippedDirs = map[string]bool{"node_modules": true, "testdata": true, "vendor": true}

// CheckSizes fails t naming every function longer than maxLines lines and every type with more
// than maxMethods methods in the module at root. It reads the module's own Go code: not test
// files, not generated files (a "Code generated … DO NOT EDIT." header, *_gen.go or
// graph/generated), not testdata or node_modules, and not nested modules (a directory with a
// go.mod of its own). Methods count per receiver type and package, pointer and value receivers
// together. It fails too when it finds fewer than ten files, so it cannot pass empty.
func CheckSizes(t testing.TB, root string, maxLines, maxMethods int) {
	t.Helper()
	report, err := MeasureSizes(root)
	if err != nil {
		t.Fatal(err)
	}
	if report.Files < 10 {
		t.Fatalf("checked only %d files under %s: is root the module's root?", report.Files, root)
	}
	for _, f := range report.Funcs {
		if f.Lines > maxLines {
			t.Errorf("%s: %s is %d lines long (at most %d)", f.Pos, f.Name, f.Lines, maxLines)
		}
	}
	for _, ty := range report.Types {
		if ty.Methods > maxMethods {
			t.Errorf("%s: type %s has %d methods (at most %d)", ty.Pkg, ty.Name, ty.Methods, maxMethods)
		}
	}
}

// Sizes is what MeasureSizes found.
type Sizes struct {
	Files int          // Go files read
	Funcs []FuncSize   // every function declaration and package-level function literal
	Types []MethodSize // every receiver type, ordered by package and name
}

// FuncSize is the length of one function.
type FuncSize struct {
	Pos   string // file:line of its first line, relative to the root
	Name  string // "Serve", "(*Node).Start" or "func literal"
	Lines int    // from its first line to its closing brace, both counted
}

// MethodSize is the number of methods of one type.
type MethodSize struct {
	Pkg     string // the package's directory, relative to the root
	Name    string
	Methods int
}

// MeasureSizes measures the functions and method sets of the module at root; see CheckSizes
// for which files it reads.
func MeasureSizes(root string) (Sizes, error) {
	var s Sizes
	methods := map[[2]string]int{} // {dir, type} → methods
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipSizeDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if !isOwnGoFile(rel) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		s.Files++
		s.Funcs = append(s.Funcs, funcSizes(fset, root, f)...)
		for _, name := range receiverNames(f) {
			methods[[2]string{filepath.Dir(rel), name}]++
		}
		return nil
	})
	if err != nil {
		return Sizes{}, fmt.Errorf("measure sizes under %s: %w", root, err)
	}
	for k, n := range methods {
		s.Types = append(s.Types, MethodSize{Pkg: k[0], Name: k[1], Methods: n})
	}
	sort.Slice(s.Types, func(i, j int) bool {
		a, b := s.Types[i], s.Types[j]
		return a.Pkg < b.Pkg || a.Pkg == b.Pkg && a.Name < b.Name
	})
	return s, nil
}

// skipSizeDir reports whether CheckSizes leaves the directory at path alone.
func skipSizeDir(path, name string) bool {
	if skippedDirs[name] || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	if filepath.Base(filepath.Dir(path)) == "graph" && name == "generated" {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil // a module of its own
}

// isOwnGoFile reports whether the file at rel is non-test, non-generated Go by its name.
func isOwnGoFile(rel string) bool {
	return strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") && !strings.HasSuffix(rel, "_gen.go")
}

// funcSizes measures f's function declarations and the function literals outside them.
func funcSizes(fset *token.FileSet, root string, f *ast.File) []FuncSize {
	var sizes []FuncSize
	measure := func(n ast.Node, name string) {
		start, end := fset.Position(n.Pos()), fset.Position(n.End())
		rel, _ := filepath.Rel(root, start.Filename)
		sizes = append(sizes, FuncSize{
			Pos:   fmt.Sprintf("%s:%d", rel, start.Line),
			Name:  name,
			Lines: end.Line - start.Line + 1,
		})
	}
	for _, decl := range f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok {
			if fn.Body != nil {
				measure(fn, funcName(fn))
			}
			continue
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			if lit, ok := n.(*ast.FuncLit); ok {
				measure(lit, "func literal")
				return false
			}
			return true
		})
	}
	return sizes
}

// funcName names fn as a reader looks it up: "Serve" or "(*Node).Start".
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	star := ""
	if p, ok := typ.(*ast.StarExpr); ok {
		star, typ = "*", p.X
	}
	return fmt.Sprintf("(%s%s).%s", star, receiverBase(typ), fn.Name.Name)
}

// receiverNames returns the receiver type of every method declared in f, once per method.
func receiverNames(f *ast.File) []string {
	var names []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
			continue
		}
		if isResolverRoot(fn) {
			continue
		}
		typ := fn.Recv.List[0].Type
		if p, ok := typ.(*ast.StarExpr); ok {
			typ = p.X
		}
		names = append(names, receiverBase(typ))
	}
	return names
}

// isResolverRoot reports whether fn is one of the accessors gqlgen writes into the resolver
// files, one per GraphQL type with resolvers ("// Job returns generated.JobResolver
// implementation." over a method returning generated.JobResolver): generated code in a hand-kept
// file, which grows with the schema, not with the Resolver's own behaviour.
func isResolverRoot(fn *ast.FuncDecl) bool {
	if fn.Doc == nil || fn.Type.Results == nil || len(fn.Type.Results.List) != 1 {
		return false
	}
	sel, ok := fn.Type.Results.List[0].Type.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	want := fn.Name.Name + " returns generated." + fn.Name.Name + "Resolver implementation."
	return ok && pkg.Name == "generated" && sel.Sel.Name == fn.Name.Name+"Resolver" && strings.TrimSpace(fn.Doc.Text()) == want
}

// receiverBase returns the name of a receiver type without its pointer or type parameters:
// List for List, List[T] and List[K, V].
func receiverBase(typ ast.Expr) string {
	switch t := typ.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return receiverBase(t.X)
	case *ast.IndexListExpr:
		return receiverBase(t.X)
	case *ast.ParenExpr:
		return receiverBase(t.X)
	case *ast.StarExpr:
		return receiverBase(t.X)
	}
	return fmt.Sprintf("%T", typ)
}
