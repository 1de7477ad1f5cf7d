package graph

import (
	"context"

	"github.com/baton-run/baton/graph/model"
	bt "github.com/baton-run/baton/runner/batontype"
)

// Types of the notifications' global ids.
const (
	typeNotificationChannel  = "NotificationChannel"
	typeNotificationRoute    = "NotificationRoute"
	typeNotificationDelivery = "NotificationDelivery"
)

// maxDeliveries bounds a page of notificationDeliveries.
const maxDeliveries = 100

// inputID decodes a mutation's id of type typ; a malformed one is refused as INVALID_INPUT
// on field, recorded in the audit log as refused.
func (r *Resolver) inputID(ctx context.Context, action, field, id, typ string) (int64, []*model.UserError) {
	n, ok := decodeIntID(id, typ)
	if !ok {
		r.auditInvalid(ctx, action, map[string]any{field: id})
		return 0, userError(model.UserErrorCodeInvalidInput, field, "%s is not a %s id", field, typ)
	}
	return n, nil
}

// optionalID decodes a query's optional id argument of type typ: 0 when absent.
func optionalID(id *string, typ, arg string) (int64, error) {
	if id == nil {
		return 0, nil
	}
	return mustIntID(*id, typ, arg)
}

// saveChannelInput is the runner's input for a channel change: an omitted field stays nil.
func saveChannelInput(in model.SaveNotificationChannelInput) bt.ChannelInput {
	out := bt.ChannelInput{Name: in.Name, URL: in.URL, Secret: in.Secret, RatePerMinute: in.RatePerMinute, Burst: in.Burst}
	if in.Kind != nil {
		out.Kind = *in.Kind
	}
	if in.Routes != nil {
		routes := make([]bt.NotificationRoute, len(in.Routes))
		for i, rt := range in.Routes {
			routes[i] = bt.NotificationRoute{Kinds: rt.Kinds, Jobs: rt.Jobs}
			if rt.MinSeverity != nil {
				routes[i].MinSeverity = *rt.MinSeverity
			}
		}
		out.Routes = &routes
	}
	return out
}

// ptrs returns pointers to list's elements, or err.
func ptrs[T any](list []T, err error) ([]*T, error) {
	if err != nil {
		return nil, err
	}
	out := make([]*T, len(list))
	for i := range list {
		out[i] = &list[i]
	}
	return out, nil
}
