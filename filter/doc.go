// Package filter is RocketMQ's SQL92 message selector: the language a
// consumer subscribes with when its expression type is "SQL92"
// (MessageSelector.bySql in the clients), compiled once by Parse and
// evaluated by Selector.Match against each message's properties on the
// broker's pull path.
//
// The behaviour is that of Apache RocketMQ's rocketmq-filter module:
// the grammar of parser/SelectorParser.jj and the run-time semantics of
// the classes in org.apache.rocketmq.filter.expression
// (ComparisonExpression, LogicExpression, UnaryExpression,
// ConstantExpression, PropertyExpression, BooleanConstantExpression),
// together with the broker's ExpressionMessageFilter, which counts
// anything but TRUE — including an exception — as "no match". Every rule
// below was read from those sources; the few places where this package
// departs from them are listed at the end, with the reason.
//
// # Use
//
//	sel, err := filter.Parse("TAGS IN ('a', 'b') AND price > 100")
//	if err != nil { … }             // *ParseError, wraps ErrSyntax, ErrTooLong or ErrTooDeep
//	ok := sel.Match(func(name string) (string, bool) {
//		v, ok := props[name]    // the message's decoded properties
//		return v, ok
//	})
//
// # Who calls what
//
// Parse runs where a subscription arrives (the heartbeat handler);
// Match and Eval run on the pull handlers' goroutines, any number at
// once, on one shared *Selector. A Selector is immutable and holds no
// goroutine, lock or cache; the Lookup is called synchronously on the
// caller's goroutine during Match and never retained. Match does not
// allocate.
//
// # Lexical rules
//
//	whitespace   ' ' \t \n \r \f  (nothing else: no vertical tab, no NBSP)
//	comment      "--" to the end of the line (or of the input);
//	             "/*" … "*/", not nested
//	keyword      NOT AND OR BETWEEN IN TRUE FALSE NULL IS CONTAINS
//	             STARTSWITH ENDSWITH — in any case ("Not", "and")
//	identifier   [A-Za-z_$][A-Za-z0-9_$]* that is not a keyword; ASCII
//	             only, no '.', no '-'; case is kept (properties are
//	             case-sensitive) — "now" is an ordinary property
//	integer      0 | [1-9][0-9]*[lL]?    decimal only: RocketMQ removed hex
//	             and octal, and "012" lexes as 0 followed by 12
//	float        [0-9]+ "." [0-9]* exp? | "." [0-9]+ exp? | [0-9]+ exp
//	exp          [eE] [+-]? [0-9]+
//	string       '…' — any characters; two quotes stand for one:
//	             'it''s' is it's
//	operators    = <> > >= < <= ( , ) + -
//
// Tokens are matched longest first, a keyword winning over an identifier
// of the same text ("IN" is a keyword, "INX" an identifier). There is
// no "!=" and no "==": '!' is not a character of the language.
//
// # Grammar
//
//	selector    = orExpr .                       (must be boolean, below)
//	orExpr      = andExpr { OR andExpr } .
//	andExpr     = equality { AND equality } .
//	equality    = comparison { ( "=" | "<>" ) comparison
//	                         | IS [ NOT ] NULL } .
//	comparison  = unary { ( ">" | ">=" | "<" | "<=" ) unary
//	                    | [ NOT ] ( CONTAINS | STARTSWITH | ENDSWITH ) string
//	                    | [ NOT ] BETWEEN unary AND unary
//	                    | [ NOT ] IN "(" string { "," string } ")" } .
//	unary       = "+" unary | "-" unary | NOT unary | primary .
//	primary     = string | integer | float | TRUE | FALSE | NULL
//	            | identifier | "(" orExpr ")" .
//
// Precedence, loosest first: OR; AND; = <> IS; the comparisons; the
// prefix operators. All binary operators associate to the left.
//
// Note that NOT is a prefix operator binding tighter than any comparison,
// exactly as in RocketMQ (and ActiveMQ, whose grammar RocketMQ's is):
// "NOT a = 1" is (NOT a) = 1, which never matches; write "NOT (a = 1)"
// or "a <> 1". The NOT of "a NOT IN (…)", "a NOT BETWEEN", "a NOT
// CONTAINS" and so on is part of the comparison and means what it says.
//
// # Values and types
//
// A message property is a string, or missing. Literals are Java-typed:
// an integer literal is an Integer (32-bit) if it fits, else a Long
// (64-bit; beyond that it does not compile); a float literal is a Double;
// strings are Strings; TRUE and FALSE Booleans; NULL is null. Unary minus
// negates a number in its own type and turns anything else into null.
// A missing property is null (SQL's UNKNOWN).
//
// Comparisons convert operands of different types towards each other as
// ComparisonExpression.__compare does:
//
//	left \ right  Boolean    Integer    Long       Double     String
//	Boolean       compare    unequal    unequal    unequal    ABORT
//	Integer       unequal    compare    as Long    as Double  R: Integer
//	Long          unequal    as Long    compare    as Double  R: Long
//	Double        unequal    as Double  as Double  compare    R: Double
//	String        L: Boolean L: Integer L: Long    L: Double  compare
//
// "R: T" converts the right-hand string with T.valueOf, "L: T" the
// left-hand one; "as T" widens the number; "unequal" compares as "less
// than". The string conversions are Java's:
//
//	Integer.valueOf  [+-]?digits within 32 bits; no spaces, no '.', no
//	                 exponent, no suffix ("5", "+5", "-0" yes; "5.0",
//	                 " 5", "3000000000" no); any Unicode decimal digit
//	                 of the BMP counts as a digit
//	Long.valueOf     the same within 64 bits
//	Double.valueOf   surrounding bytes up to ' ' trimmed; [+-]? then
//	                 digits with at most one '.', optional exponent,
//	                 optional one of fFdD; or NaN, Infinity, or a hex
//	                 float 0x1.8p3 ("1e3", " 2.5 ", "7d", "NaN" yes)
//	Boolean.valueOf  "true" in any case is TRUE, anything else FALSE
//
// So the type of the literal decides how a property is read:
// "a > 5" reads a as a 32-bit integer, "a > 5.0" as a double,
// "a > 3000000000" as a 64-bit integer. Doubles order as Double.compare
// does: -0.0 < 0.0, and NaN is above +Infinity and equal to itself.
//
// A conversion that fails ABORTS the evaluation: RocketMQ throws, the
// broker logs the exception and the message does not match — the whole
// selector, not just the comparison, so "a > 5 OR b = 'x'" does not
// match a message with a = 'abc', b = 'x', while "b = 'x' OR a > 5" does
// (OR stops at its first TRUE). Eval reports the abort as ErrEval.
// A Boolean on the left of a string ("TRUE = flag" with flag present)
// always aborts: RocketMQ casts the Boolean to a String there (a
// ClassCastException). "flag = TRUE" works.
//
// The operators, for a property a (S is its string value):
//
//	a = lit, a <> lit  S converted to lit's type (strings compare exactly)
//	a > lit …          the same; two strings (a > b) are both read as
//	                   Double; a string literal cannot be ordered
//	a BETWEEN x AND y  (a >= x) AND (a <= y), each comparison on its own
//	a NOT BETWEEN …    (a < x) OR (a > y)
//	a IN ('x', …)      string membership; NOT IN its negation
//	a CONTAINS 's'     substring test; STARTSWITH, ENDSWITH prefix, suffix
//	a IS NULL          a is missing; never UNKNOWN
//	a (alone, as a boolean)  FALSE if present (a string is not a
//	                   Boolean), UNKNOWN if missing
//
// RocketMQ's documented example holds: after putUserProperty("a", "1"),
// "a BETWEEN 0 AND 3" matches ("1" read as Integer 1).
//
// # NULL (UNKNOWN) rules
//
// AND, OR and NOT are Kleene's three-valued logic, evaluated left to
// right, stopping at the first operand that decides (FALSE for AND,
// TRUE for OR):
//
//	x        y        x AND y   x OR y   NOT x
//	TRUE     TRUE     TRUE      TRUE     FALSE
//	TRUE     FALSE    FALSE     TRUE     FALSE
//	TRUE     UNKNOWN  UNKNOWN   TRUE     FALSE
//	FALSE    any      FALSE     y        TRUE
//	UNKNOWN  TRUE     UNKNOWN   TRUE     UNKNOWN
//	UNKNOWN  FALSE    FALSE     UNKNOWN  UNKNOWN
//	UNKNOWN  UNKNOWN  UNKNOWN   UNKNOWN  UNKNOWN
//
// Comparisons with a missing operand:
//
//	expression                 left missing   right missing   both missing
//	x = y                      UNKNOWN        FALSE           TRUE
//	x <> y                     UNKNOWN        TRUE            FALSE
//	x > y (and >= < <=)        UNKNOWN        UNKNOWN         UNKNOWN
//	x [NOT] IN (…)             UNKNOWN        -               -
//	x [NOT] CONTAINS 's' (…)   FALSE          -               -
//	x IS NULL / IS NOT NULL    TRUE / FALSE   -               -
//
// The "=" row is RocketMQ's own asymmetry, kept: "a = b" with only b
// missing is FALSE (and "a <> b" TRUE), with only a missing UNKNOWN.
// CONTAINS, STARTSWITH, ENDSWITH and their NOT forms are FALSE for a
// missing or non-string left side and for an empty search string, so
// "a NOT CONTAINS 'x'" does not match a message without a, while
// "NOT (a CONTAINS 'x')" does.
//
// A message matches only if the selector is TRUE. UNKNOWN, FALSE and
// an aborted evaluation all mean no match.
//
// # Compile-time checks
//
// Parse rejects (ErrSyntax) what RocketMQ's parser rejects while building
// the expression, besides plain syntax errors:
//
//   - A selector, and each operand of AND, OR and NOT, must be boolean: a
//     comparison, a logic expression, TRUE, FALSE, NULL, or a bare
//     property. "5", "'x'", "-a", "a AND 'x'" are rejected; "TRUE",
//     "NULL" and "a" compile (and "a" never matches).
//   - Either side of > >= < <= and all three operands of [NOT] BETWEEN
//     must be a property, a numeric literal or a negation: no string,
//     TRUE, FALSE or NULL literal and no boolean expression
//     ("a > 'x'", "a > b > c" are rejected).
//   - Neither side of = or <> may be the NULL literal (use IS NULL); and
//     a TRUE or FALSE literal on the left of = may not face a non-boolean
//     literal ("TRUE = 1" is rejected, "1 = TRUE" compiles and is FALSE).
//   - BETWEEN with two literal bounds needs lower ≤ upper ("a BETWEEN 10
//     AND 0" is rejected; NOT BETWEEN is not checked, nor are negated
//     bounds such as "-1", which are expressions, not literals).
//   - The left of [NOT] IN must be a property; the list holds string
//     literals only ("a IN (1, 2)" is rejected).
//   - CONTAINS, STARTSWITH and ENDSWITH take a string literal.
//   - An integer literal beyond 64 bits; a float literal that overflows,
//     or is zero or below 4.9E-324 — RocketMQ's createFloat compares with
//     Double.MIN_VALUE, the smallest positive double, so even "0.0" and
//     "0e1" are rejected: write 0.
//
// # Canonical form
//
// Selector.String prints the compiled tree: keywords upper case, single
// spaces, no comments, parentheses only where the grammar needs them
// (plus around a NOT used as a comparison operand, for the reader).
// Parsing it gives a selector with the same tree and the same results.
//
// # Limits
//
// An expression may be at most MaxLen bytes (ErrTooLong); its syntax tree
// at most MaxDepth high and its parentheses and prefix operators at most
// MaxNesting deep (ErrTooDeep). Parse and evaluation recurse only along
// the tree, so both are bounded; chains of AND or OR are one level
// however long. A long IN list is matched through a hash set.
//
// # Differences from RocketMQ
//
//   - Trailing input. RocketMQ's grammar does not ask for the end of the
//     input, so it compiles the longest valid prefix and ignores the
//     rest: "a = 1 b = 2", "a = 1)" and "a = 012" (read as a = 0) compile
//     there. Parse rejects them: a silently ignored clause delivers
//     messages the subscriber meant to exclude.
//   - A "--" comment may end at the end of the input. RocketMQ's comment
//     needs a line break; without one it reads "--" as two minus signs
//     and then, by the rule above, usually ignores them. The one visible
//     difference: a literal double negation written "--5" at the end of
//     the input is a comment here.
//   - Property values are Go strings and compared byte for byte. The
//     broker decodes properties as RocketMQ does (UTF-8), so this differs
//     only for invalid UTF-8, which Java would have replaced by U+FFFD.
//     Ordering of two different strings is never observable.
//   - RocketMQ caches the last 100 compiled expressions; this package
//     leaves caching to its caller (Parse is cheap, Selectors are
//     shareable).
//   - The limits above, which RocketMQ does not have.
package filter
