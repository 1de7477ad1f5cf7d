package graph

// gqlgen.yml lives at the repository root and names paths from there.
//go:generate go run -C .. github.com/99designs/gqlgen generate
