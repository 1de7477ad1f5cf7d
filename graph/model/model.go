// Package model holds the GraphQL API's own types: the ones gqlgen generates from the schema
// (models_gen.go) and a few written by hand. Domain records are bound directly to
// runner/batontype; this package only has what the API adds (pages, payloads, roles).
package model

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Node is any object with a global id: the result of Query.node. The executor picks the
// GraphQL type from the concrete Go type (*batontype.RunRecord, *batontype.JobSettings, ...).
type Node interface{}

// Role is what an API token may do. Roles are ordered: each may do everything the ones before
// it may.
type Role string

// Roles, in order.
const (
	RoleViewer   Role = "VIEWER"
	RoleOperator Role = "OPERATOR"
	RoleApprover Role = "APPROVER"
	RoleAdmin    Role = "ADMIN"
)

// rank orders roles; an unknown role ranks below every known one.
func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleOperator:
		return 2
	case RoleApprover:
		return 3
	case RoleAdmin:
		return 4
	}
	return 0
}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether r may do what min may.
func (r Role) AtLeast(min Role) bool { return r.Valid() && r.rank() >= min.rank() }

// Stored returns the role as stored in api_tokens (lower case).
func (r Role) Stored() string { return strings.ToLower(string(r)) }

// ParseRole parses a role in any case ("operator", "OPERATOR").
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToUpper(strings.TrimSpace(s)))
	if !r.Valid() {
		return "", fmt.Errorf("unknown role %q (want viewer, operator, approver or admin)", s)
	}
	return r, nil
}

// String returns the role's GraphQL name.
func (r Role) String() string { return string(r) }

// MarshalGQL writes the role as a GraphQL enum value.
func (r Role) MarshalGQL(w io.Writer) { _, _ = io.WriteString(w, strconv.Quote(string(r))) }

// UnmarshalGQL reads a GraphQL enum value.
func (r *Role) UnmarshalGQL(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("role must be a string, not %T", v)
	}
	role := Role(s)
	if !role.Valid() {
		return fmt.Errorf("%q is not a valid Role", s)
	}
	*r = role
	return nil
}
