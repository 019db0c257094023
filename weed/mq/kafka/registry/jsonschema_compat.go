package registry

// JSON Schema compatibility: whether the update takes every document the
// original takes, judged on the two schemas' structure as Confluent's
// registry judges it (its published cases pass, see docs/schema-registry.md).

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
)

// jsonDiff collects why update cannot take everything original takes.
type jsonDiff struct {
	out  []string
	seen map[[2]string]bool
	// work counts comparisons: combinations nested in combinations
	// compare every pair, which a schema could make endless.
	work *int
}

// maxJSONWork bounds the comparisons of one check; a pair of schemas
// that needs more is refused as too complex to tell compatible.
const maxJSONWork = 200_000

func (d *jsonDiff) add(path, change string) {
	d.out = append(d.out, change+" at "+path)
}

// compatible reports whether update takes all original takes, without
// recording why not.
func (d *jsonDiff) compatible(path string, o, u node) bool {
	sub := &jsonDiff{seen: d.seen, work: d.work}
	sub.compare(path, o, u)
	return len(sub.out) == 0 && *d.work <= maxJSONWork
}

// combination is a combined schema's criterion and subschemas.
func combination(n node) (string, []node) {
	if _, subs := n.kind(); subs != nil {
		return "anyOf", subs
	}
	m := n.obj()
	for _, c := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := m[c].([]any); ok {
			var subs []node
			for i, s := range list {
				subs = append(subs, n.child(s, fmt.Sprintf("/%s/%d", c, i)))
			}
			return c, subs
		}
	}
	return "", nil
}

func (d *jsonDiff) compare(path string, o, u node) {
	if *d.work++; *d.work > maxJSONWork {
		return // canRead says so
	}
	o, u = o.deref(), u.deref()
	key := [2]string{o.loc, u.loc}
	if d.seen[key] {
		return // being compared further up: what it finds, it finds there
	}
	d.seen[key] = true
	defer delete(d.seen, key)

	ok, _ := o.kind()
	uk, _ := u.kind()
	if ok == kindFalse || uk == kindAny {
		return
	}
	// A combination of one schema is that schema.
	if _, subs := combination(u); uk == kindCombined && len(subs) == 1 {
		d.compare(path, o, subs[0])
		return
	}
	if _, subs := combination(o); ok == kindCombined && len(subs) == 1 {
		d.compare(path, subs[0], u)
		return
	}
	// One side a combination and the other not.
	if uc, us := combination(u); uk == kindCombined && ok != kindCombined && d.covers(path, []node{o}, true, us, uc == "allOf") {
		return
	}
	if oc, os := combination(o); ok == kindCombined && uk != kindCombined && d.covers(path, os, oc == "allOf", []node{u}, true) {
		return
	}
	// An enum beside other keywords narrows them: without it the
	// original takes more, so what takes that takes the original.
	oe, ue := hasEnum(o), hasEnum(u)
	if oe && !ue && ok == kindEnum && len(o.obj()) > 1 {
		d.compare(path, withoutEnum(o), u)
		return
	}
	if ue && !oe && uk == kindEnum && len(u.obj()) > 1 && ok != kindAny {
		d.add(path, "ENUM_ARRAY_ADDED")
		d.compare(path, o, withoutEnum(u))
		return
	}
	if ok != uk {
		d.add(path, fmt.Sprintf("TYPE_CHANGED: %s to %s", ok, uk))
		return
	}
	switch ok {
	case kindString:
		d.lengths(path, o, u, "maxLength", "minLength", "LENGTH")
		op, _ := o.obj()["pattern"].(string)
		up, _ := u.obj()["pattern"].(string)
		if up != "" && up != op {
			if op == "" {
				d.add(path, "PATTERN_ADDED")
			} else {
				d.add(path, "PATTERN_CHANGED")
			}
		}
	case kindNumber:
		d.numbers(path, o, u)
	case kindEnum:
		ov, uv := enumValues(o), enumValues(u)
		for _, v := range ov {
			if !slices.ContainsFunc(uv, func(x any) bool { return sameJSON(x, v) }) {
				d.add(path, "ENUM_ARRAY_NARROWED")
				break
			}
		}
	case kindNot:
		// not A takes all not B takes when A is within B.
		on, un := o.child(o.obj()["not"], "/not"), u.child(u.obj()["not"], "/not")
		if !d.compatible(path+"/not", un, on) {
			d.add(path, "NOT_TYPE_EXTENDED")
		}
	case kindCombined:
		d.combined(path, o, u)
	case kindObject:
		d.object(path, o, u)
	case kindArray:
		d.array(path, o, u)
	}
}

func enumValues(n node) []any {
	m := n.obj()
	if c, ok := m["const"]; ok {
		return []any{c}
	}
	list, _ := m["enum"].([]any)
	return list
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// number reads a numeric keyword.
func number(m map[string]any, k string) (float64, bool) {
	switch v := m[k].(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case float64:
		return v, true
	}
	return 0, false
}

// lengths compares a maximum and a minimum that may only widen.
func (d *jsonDiff) lengths(path string, o, u node, maxK, minK, name string) {
	om, um := o.obj(), u.obj()
	omax, hasOmax := number(om, maxK)
	umax, hasUmax := number(um, maxK)
	switch {
	case hasUmax && !hasOmax:
		d.add(path, "MAX_"+name+"_ADDED")
	case hasUmax && umax < omax:
		d.add(path, "MAX_"+name+"_DECREASED")
	}
	omin, hasOmin := number(om, minK)
	umin, hasUmin := number(um, minK)
	switch {
	case hasUmin && !hasOmin && umin > 0:
		d.add(path, "MIN_"+name+"_ADDED")
	case hasUmin && umin > omin:
		d.add(path, "MIN_"+name+"_INCREASED")
	}
}

// bound is a number's limit on one side: none, or a value that is or is
// not itself allowed.
type bound struct {
	set       bool
	v         float64
	exclusive bool
}

// limits reads maximum and minimum with their exclusive forms (draft 4's
// booleans or later drafts' numbers), the tighter of each.
func limits(m map[string]any) (upper, lower bound) {
	tighter := func(b bound, v float64, excl, isUpper bool) bound {
		if !b.set || (isUpper && (v < b.v || v == b.v && excl)) || (!isUpper && (v > b.v || v == b.v && excl)) {
			return bound{true, v, excl}
		}
		return b
	}
	if v, ok := number(m, "maximum"); ok {
		upper = tighter(upper, v, m["exclusiveMaximum"] == true, true)
	}
	if v, ok := number(m, "exclusiveMaximum"); ok {
		upper = tighter(upper, v, true, true)
	}
	if v, ok := number(m, "minimum"); ok {
		lower = tighter(lower, v, m["exclusiveMinimum"] == true, false)
	}
	if v, ok := number(m, "exclusiveMinimum"); ok {
		lower = tighter(lower, v, true, false)
	}
	return upper, lower
}

func (d *jsonDiff) numbers(path string, o, u node) {
	om, um := o.obj(), u.obj()
	if um["type"] == "integer" && om["type"] != "integer" {
		d.add(path, "TYPE_NARROWED: number to integer")
	}
	ou, ol := limits(om)
	uu, ul := limits(um)
	switch {
	case uu.set && !ou.set:
		d.add(path, "MAXIMUM_ADDED")
	case uu.set && (uu.v < ou.v || uu.v == ou.v && uu.exclusive && !ou.exclusive):
		d.add(path, "MAXIMUM_DECREASED")
	}
	switch {
	case ul.set && !ol.set:
		d.add(path, "MINIMUM_ADDED")
	case ul.set && (ul.v > ol.v || ul.v == ol.v && ul.exclusive && !ol.exclusive):
		d.add(path, "MINIMUM_INCREASED")
	}
	omul, hasO := number(om, "multipleOf")
	umul, hasU := number(um, "multipleOf")
	switch {
	case hasU && !hasO:
		d.add(path, "MULTIPLE_OF_ADDED")
	case hasU && umul != omul:
		if q := omul / umul; math.Abs(q-math.Round(q)) > 1e-9 {
			d.add(path, "MULTIPLE_OF_CHANGED")
		}
	}
}

func (d *jsonDiff) combined(path string, o, u node) {
	oc, os := combination(o)
	uc, us := combination(u)
	if !d.covers(path, os, oc == "allOf", us, uc == "allOf") {
		d.add(path, fmt.Sprintf("COMBINED_TYPE_NARROWED: %s to %s", oc, uc))
	}
}

// covers reports whether the update's members take every document the
// original's take; all says the members combine by allOf, else by anyOf
// (oneOf is taken as anyOf, as Confluent's registry takes it).
func (d *jsonDiff) covers(path string, os []node, oAll bool, us []node, uAll bool) bool {
	within := func(s node) bool { // s is within some member of the update
		return slices.ContainsFunc(us, func(t node) bool { return d.compatible(path, s, t) })
	}
	switch {
	case !oAll && !uAll: // each original member within an update member
		for _, s := range os {
			if !within(s) {
				return false
			}
		}
		return true
	case !oAll: // each update member takes each original member
		for _, t := range us {
			for _, s := range os {
				if !d.compatible(path, s, t) {
					return false
				}
			}
		}
		return true
	case uAll: // each update member takes an original member
		for _, t := range us {
			if !slices.ContainsFunc(os, func(s node) bool { return d.compatible(path, s, t) }) {
				return false
			}
		}
		return true
	default: // an original member within an update member
		return slices.ContainsFunc(os, within)
	}
}

func hasEnum(n node) bool {
	m := n.obj()
	_, e := m["enum"]
	_, c := m["const"]
	return e || c
}

func withoutEnum(n node) node {
	m := maps(n.obj())
	delete(m, "enum")
	delete(m, "const")
	return n.child(m, "/-enum")
}

// contentModel is what an object or array says of members it does not
// name: open (anything), closed (nothing), or open to a schema.
type contentModel struct {
	closed bool
	schema *node
}

func (c contentModel) open() bool { return !c.closed && c.schema == nil }

func model(n node, key string) contentModel {
	v, ok := n.obj()[key]
	if !ok {
		return contentModel{}
	}
	switch k, _ := n.child(v, "/"+key).deref().kind(); k {
	case kindAny:
		return contentModel{}
	case kindFalse:
		return contentModel{closed: true}
	}
	s := n.child(v, "/"+key)
	return contentModel{schema: &s}
}

// propertyModel is the model a property's name falls under: the
// patternProperties its name matches, else the object's.
func propertyModel(n node, name string, m contentModel) contentModel {
	if ps, ok := patternFor(n, name); ok {
		return contentModel{schema: &ps}
	}
	return m
}

// added: a member the update names that the original left to its model
// (o): the model must have taken no document the member refuses.
func (d *jsonDiff) added(path, what string, o contentModel, s node) {
	switch {
	case o.closed:
	case o.schema != nil:
		if !d.compatible(path, *o.schema, s) {
			d.add(path, what+"_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
		}
	default:
		if k, _ := s.deref().kind(); k != kindAny {
			d.add(path, what+"_ADDED_TO_OPEN_CONTENT_MODEL")
		}
	}
}

// removed: a member the original named that the update leaves to its
// model (u), which must take what the member took.
func (d *jsonDiff) removed(path, what string, u contentModel, s node) {
	switch {
	case u.closed:
		if k, _ := s.deref().kind(); k != kindFalse {
			d.add(path, what+"_REMOVED_FROM_CLOSED_CONTENT_MODEL")
		}
	case u.schema != nil:
		if !d.compatible(path, s, *u.schema) {
			d.add(path, what+"_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
		}
	}
}

// rest compares the models of the members neither names (key is the
// keyword, for the path): closing or narrowing an open one takes less.
func (d *jsonDiff) rest(path, key, what string, o, u contentModel) {
	switch {
	case o.closed:
	case u.closed:
		d.add(path, "ADDITIONAL_"+what+"_REMOVED")
	case u.schema != nil && o.open():
		d.add(path, "ADDITIONAL_"+what+"_NARROWED")
	case u.schema != nil:
		d.compare(path+key, *o.schema, *u.schema)
	}
}

func stringList(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, s := range list {
		if str, ok := s.(string); ok {
			out = append(out, str)
		}
	}
	return out
}

func (d *jsonDiff) object(path string, o, u node) {
	om, um := o.obj(), u.obj()
	oprops, _ := om["properties"].(map[string]any)
	uprops, _ := um["properties"].(map[string]any)
	omodel, umodel := model(o, "additionalProperties"), model(u, "additionalProperties")
	oreq, ureq := stringList(om["required"]), stringList(um["required"])
	for _, name := range sortedKeys(uprops) {
		p := path + "/properties/" + name
		us := u.child(uprops[name], "/properties/"+name)
		if ov, ok := oprops[name]; ok {
			d.compare(p, o.child(ov, "/properties/"+name), us)
			continue
		}
		d.added(p, "PROPERTY", propertyModel(o, name, omodel), us)
	}
	for _, name := range sortedKeys(oprops) {
		if _, ok := uprops[name]; ok {
			continue
		}
		p := path + "/properties/" + name
		os := o.child(oprops[name], "/properties/"+name)
		d.removed(p, "PROPERTY", propertyModel(u, name, umodel), os)
	}
	for _, name := range ureq {
		if _, named := uprops[name]; !named || slices.Contains(oreq, name) {
			continue // a required name that is no property is not checked, as Confluent's registry does not
		}
		if ps, ok := uprops[name].(map[string]any); ok {
			if _, hasDefault := ps["default"]; hasDefault {
				continue
			}
		}
		d.add(path+"/required/"+name, "REQUIRED_ATTRIBUTE_ADDED")
	}
	d.rest(path, "/additionalProperties", "PROPERTIES", omodel, umodel)
	d.lengths(path, o, u, "maxProperties", "minProperties", "PROPERTIES")
	d.dependencies(path, o, u)
}

func (d *jsonDiff) dependencies(path string, o, u node) {
	om, um := o.obj(), u.obj()
	arrays := func(m map[string]any) map[string][]string {
		out := map[string][]string{}
		for _, k := range []string{"dependencies", "dependentRequired"} {
			deps, _ := m[k].(map[string]any)
			for name, v := range deps {
				if _, ok := v.([]any); ok {
					out[name] = stringList(v)
				}
			}
		}
		return out
	}
	oa, ua := arrays(om), arrays(um)
	for _, name := range sortedKeys(ua) {
		prev, ok := oa[name]
		if !ok {
			d.add(path+"/dependencies/"+name, "DEPENDENCY_ARRAY_ADDED")
			continue
		}
		for _, dep := range ua[name] {
			if !slices.Contains(prev, dep) {
				d.add(path+"/dependencies/"+name, "DEPENDENCY_ARRAY_EXTENDED")
				break
			}
		}
	}
	schemas := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for _, k := range []string{"dependencies", "dependentSchemas"} {
			deps, _ := m[k].(map[string]any)
			for name, v := range deps {
				if _, ok := v.([]any); !ok {
					out[name] = v
				}
			}
		}
		return out
	}
	os, us := schemas(om), schemas(um)
	for _, name := range sortedKeys(us) {
		p := path + "/dependencies/" + name
		if ov, ok := os[name]; !ok {
			d.add(p, "DEPENDENCY_SCHEMA_ADDED")
		} else {
			d.compare(p, o.child(ov, "/dependencies/"+name), u.child(us[name], "/dependencies/"+name))
		}
	}
}

// patternFor returns the schema of the patternProperties whose pattern
// matches a property's name.
func patternFor(n node, name string) (node, bool) {
	pats, _ := n.obj()["patternProperties"].(map[string]any)
	for _, pat := range sortedKeys(pats) {
		if re, err := regexp.Compile(pat); err == nil && re.MatchString(name) {
			return n.child(pats[pat], "/patternProperties/"+pat), true
		}
	}
	return node{}, false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// items returns an array's positional item schemas (draft 4-7's items
// list or 2020-12's prefixItems) and the model of the rest.
func items(n node) ([]node, contentModel) {
	m := n.obj()
	if list, ok := m["prefixItems"].([]any); ok {
		var out []node
		for i, s := range list {
			out = append(out, n.child(s, fmt.Sprintf("/prefixItems/%d", i)))
		}
		return out, model(n, "items")
	}
	if list, ok := m["items"].([]any); ok {
		var out []node
		for i, s := range list {
			out = append(out, n.child(s, fmt.Sprintf("/items/%d", i)))
		}
		return out, model(n, "additionalItems")
	}
	if _, ok := m["items"]; !ok {
		// additionalItems alone: the content model all the same, as
		// Confluent's registry reads it.
		return nil, model(n, "additionalItems")
	}
	return nil, model(n, "items")
}

func (d *jsonDiff) array(path string, o, u node) {
	oitems, omodel := items(o)
	uitems, umodel := items(u)
	for i := range max(len(oitems), len(uitems)) {
		p := fmt.Sprintf("%s/items/%d", path, i)
		switch {
		case i < len(oitems) && i < len(uitems):
			d.compare(p, oitems[i], uitems[i])
		case i < len(uitems):
			d.added(p, "ITEM", omodel, uitems[i])
		default:
			d.removed(p, "ITEM", umodel, oitems[i])
		}
	}
	d.rest(path, "/items", "ITEMS", omodel, umodel)
	d.lengths(path, o, u, "maxItems", "minItems", "ITEMS")
	if u.obj()["uniqueItems"] == true && o.obj()["uniqueItems"] != true {
		d.add(path, "UNIQUE_ITEMS_ADDED")
	}
}
