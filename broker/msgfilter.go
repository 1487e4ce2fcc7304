package broker

import (
	"fmt"

	"github.com/ledgermq/ledgermq/filter"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/store"
)

// expressionTypeSQL92 is the expression type of an SQL92 subscription.
const expressionTypeSQL92 = "SQL92"

// msgFilter is what a pull delivers: a tag expression (the store skips
// queue units by tag hash, the broker then checks each record's tag
// exactly) or an SQL92 selector evaluated against each record's
// properties (the store then reads every unit). Immutable once built;
// shared by the pulls of one subscription.
type msgFilter struct {
	tags *store.TagFilter
	sql  *filter.Selector // nil for a tag expression
}

// newMsgFilter compiles expr of type exprType ("" and "TAG" are tag
// expressions). An SQL92 expression is refused when sqlEnabled is false,
// as RocketMQ refuses it without enablePropertyFilter; errors wrap
// ErrSubscriptionParse or ErrFilterNotSupported.
func newMsgFilter(expr, exprType string, sqlEnabled bool) (msgFilter, error) {
	switch exprType {
	case "", expressionTypeTag:
		return msgFilter{tags: store.NewTagFilter(expr)}, nil
	case expressionTypeSQL92:
		if !sqlEnabled {
			return msgFilter{}, fmt.Errorf("%w: %s (enablePropertyFilter is off)", ErrFilterNotSupported, exprType)
		}
		sel, err := filter.Parse(expr)
		if err != nil {
			return msgFilter{}, fmt.Errorf("%w: %w", ErrSubscriptionParse, err)
		}
		return msgFilter{tags: store.NewTagFilter("*"), sql: sel}, nil
	default:
		return msgFilter{}, fmt.Errorf("%w: %s", ErrFilterNotSupported, exprType)
	}
}

// match checks one record: its tag exactly against the tag expression (an
// untagged message matches only "*"), or its properties against the SQL92
// selector. A record that does not parse is left out.
func (f msgFilter) match(rec []byte) bool {
	if f.sql == nil {
		return recordMatches(rec, f.tags)
	}
	v, err := message.ParseView(rec)
	if err != nil {
		return false
	}
	return f.sql.Match(func(name string) (string, bool) {
		p, ok := v.Property(name)
		return string(p), ok
	})
}
