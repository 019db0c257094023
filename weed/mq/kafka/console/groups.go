package console

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupRow is a line of the groups' list.
type groupRow struct {
	Name, Type, State, ProtocolType string
	Lag                             int64
	HasLag                          bool
}

// groupsPage lists the groups of every kind whose name holds q.
func (r *request) groupsPage() error {
	q := strings.TrimSpace(r.q.URL.Query().Get("q"))
	typ := r.q.URL.Query().Get("type")
	pageNo, _ := strconv.Atoi(r.q.URL.Query().Get("page"))
	lag := r.lag()
	if lag.err != nil && lag.groups == nil {
		return lag.err
	}
	var rows []groupRow
	for name, g := range lag.groups {
		if (q != "" && !strings.Contains(name, q)) || (typ != "" && groupType(g) != typ) {
			continue
		}
		row := groupRow{Name: name, Type: groupType(g), State: g.State, ProtocolType: g.ProtocolType}
		row.Lag, row.HasLag = lag.byGroup[name]
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	from, to, more := pageBounds(len(rows), pageNo)
	r.data["Q"], r.data["Type"] = q, typ
	r.data["Rows"] = rows[from:to]
	r.data["Total"] = len(rows)
	r.data["PageNo"], r.data["From"], r.data["To"], r.data["More"] = pageNo, from+1, to, more
	r.data["Measured"] = lag.at
	return r.render("groups", http.StatusOK)
}

// groupType is a listed group's kind: classic, consumer, share or
// streams.
func groupType(g kadm.ListedGroup) string {
	if g.GroupType != "" {
		return strings.ToLower(g.GroupType)
	}
	return "classic"
}

// member is a group member as the page shows it.
type member struct {
	ID, InstanceID, ClientID, Host, Rack string
	Epoch                                int32
	Assignment, Target                   string
}

// offsetRow is a group's position on a partition.
type offsetRow struct {
	Topic      string
	Partition  int32
	Committed  int64 // -1: none (share groups: the share-partition start)
	Start, End int64
	Lag        int64
	HasLag     bool
	Err        string
}

// groupPage shows a group of any kind: its state, members and
// assignments, and its committed offsets with their lag.
func (r *request) groupPage() error {
	name := r.q.PathValue("group")
	listed, err := r.adm.ListGroups(r.ctx)
	if err != nil {
		return err
	}
	lg, ok := listed[name]
	if !ok {
		return pageError{http.StatusNotFound, fmt.Sprintf("group %s: not found, or not yours to describe", name)}
	}
	typ := groupType(lg)
	var members []member
	state, protocol := lg.State, lg.ProtocolType
	assignor := ""
	switch typ {
	case "consumer":
		d, err := r.adm.DescribeConsumerGroups(r.ctx, name)
		if err != nil {
			return err
		}
		g := d[name]
		if g.Err != nil {
			return g.Err
		}
		state, assignor = g.State, g.AssignorName
		for _, m := range g.Members {
			members = append(members, member{ID: m.MemberID, InstanceID: deref(m.InstanceID), ClientID: m.ClientID, Host: m.ClientHost,
				Rack: deref(m.RackID), Epoch: m.MemberEpoch, Assignment: topicsSet(m.Assignment), Target: topicsSet(m.TargetAssignment)})
		}
	case "share":
		d, err := r.adm.DescribeShareGroups(r.ctx, name)
		if err != nil {
			return err
		}
		g := d[name]
		if g.Err != nil {
			return g.Err
		}
		state, assignor = g.GroupState, g.Assignor
		for _, m := range g.Members {
			members = append(members, member{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Rack: deref(m.RackID),
				Epoch: m.MemberEpoch, Assignment: topicsSet(m.Assignment)})
		}
	case "streams":
		g, err := r.describeStreams(name)
		if err != nil {
			return err
		}
		state, assignor = g.State, deref(g.AssignorName)
		for _, m := range g.Members {
			members = append(members, member{ID: m.MemberID, InstanceID: deref(m.InstanceID), ClientID: m.ClientID, Host: m.ClientHost,
				Rack: deref(m.RackID), Epoch: m.MemberEpoch, Assignment: tasks(m.Assignment), Target: tasks(m.TargetAssignment)})
		}
	default:
		d, err := r.adm.DescribeGroups(r.ctx, name)
		if err != nil {
			return err
		}
		g := d[name]
		if g.Err != nil {
			return g.Err
		}
		state, protocol, assignor = g.State, g.ProtocolType, g.Protocol
		for _, m := range g.Members {
			mm := member{ID: m.MemberID, InstanceID: deref(m.InstanceID), ClientID: m.ClientID, Host: m.ClientHost}
			if c, ok := m.Assigned.AsConsumer(); ok {
				var parts []string
				for _, t := range c.Topics {
					parts = append(parts, fmt.Sprintf("%s %v", t.Topic, t.Partitions))
				}
				mm.Assignment = strings.Join(parts, "; ")
			}
			members = append(members, mm)
		}
	}
	rows, total, err := r.groupOffsets(name, typ)
	if err != nil {
		return err
	}
	var topics []string
	seen := map[string]bool{}
	for _, row := range rows {
		if !seen[row.Topic] {
			seen[row.Topic] = true
			topics = append(topics, row.Topic)
		}
	}
	r.data["Group"] = name
	r.data["Type"] = typ
	r.data["State"] = state
	r.data["Protocol"] = protocol
	r.data["Assignor"] = assignor
	r.data["Members"] = members
	r.data["Offsets"] = rows
	r.data["TotalLag"] = total
	r.data["Topics"] = topics
	r.data["CanReset"] = len(members) == 0
	return r.render("group", http.StatusOK)
}

// groupOffsets is a group's position on each partition it committed on
// (share groups: each share-partition), with the lag, and the total.
func (r *request) groupOffsets(group, typ string) ([]offsetRow, int64, error) {
	var rows []offsetRow
	var total int64
	if typ == "share" {
		d, err := r.adm.DescribeShareGroupOffsets(r.ctx, group)
		if err != nil {
			return nil, 0, err
		}
		g := d[group]
		if g.Err != nil {
			return nil, 0, g.Err
		}
		parts := map[string][]int32{}
		for t, ps := range g.Offsets {
			for p := range ps {
				parts[t] = append(parts[t], p)
			}
		}
		ends, _ := listOffsets(r.ctx, r.cl, parts, latest)
		for t, ps := range g.Offsets {
			for p, o := range ps {
				row := offsetRow{Topic: t, Partition: p, Committed: o.StartOffset, Start: -1, End: -1}
				if e, ok := ends.Lookup(t, p); ok && e.Err == nil {
					row.End = e.Offset
				}
				if o.Err != nil {
					row.Err = o.Err.Error()
				} else if o.Lag >= 0 {
					row.Lag, row.HasLag = o.Lag, true
					total += o.Lag
				}
				rows = append(rows, row)
			}
		}
	} else {
		fetched, err := r.adm.FetchOffsets(r.ctx, group)
		if err != nil {
			return nil, 0, err
		}
		parts := map[string][]int32{}
		for t, ps := range fetched {
			for p := range ps {
				parts[t] = append(parts[t], p)
			}
		}
		starts, ends, err := startsAndEnds(r.ctx, r.cl, parts)
		if err != nil {
			return nil, 0, err
		}
		for t, ps := range fetched {
			for p, o := range ps {
				row := offsetRow{Topic: t, Partition: p, Committed: o.At, Start: -1, End: -1}
				if s, ok := starts.Lookup(t, p); ok && s.Err == nil {
					row.Start = s.Offset
				}
				if e, ok := ends.Lookup(t, p); ok && e.Err == nil {
					row.End = e.Offset
				}
				if o.Err != nil {
					row.Err = o.Err.Error()
				} else if o.At >= 0 {
					if lag, ok := partitionLag(starts, ends, t, p, o.At); ok {
						row.Lag, row.HasLag = lag, true
						total += lag
					}
				}
				rows = append(rows, row)
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Topic != rows[j].Topic {
			return rows[i].Topic < rows[j].Topic
		}
		return rows[i].Partition < rows[j].Partition
	})
	return rows, total, nil
}

// describeStreams asks the group's coordinator for a streams group
// (KIP-1071).
func (r *request) describeStreams(group string) (*kmsg.StreamsGroupDescribeResponseGroup, error) {
	coords := r.adm.FindGroupCoordinators(r.ctx, group)
	c, ok := coords[group]
	if !ok || c.Err != nil {
		return nil, fmt.Errorf("the coordinator of %s: %v", group, c.Err)
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(r.ctx, r.cl.Broker(int(c.NodeID)))
	if err != nil {
		return nil, err
	}
	if len(resp.Groups) != 1 {
		return nil, fmt.Errorf("the coordinator described %d groups", len(resp.Groups))
	}
	g := &resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		return nil, err
	}
	return g, nil
}

// resetOffsets moves an empty group's offsets on a topic (or one of its
// partitions) to the earliest, the latest, a timestamp or an offset.
func (r *request) resetOffsets() error {
	group := r.q.PathValue("group")
	back := "/groups/" + pathEscape(group)
	topic := strings.TrimSpace(r.q.PostFormValue("topic"))
	to := r.q.PostFormValue("to")
	if topic == "" {
		return pageError{http.StatusBadRequest, "name the topic whose offsets to reset"}
	}
	listed, err := r.adm.ListGroups(r.ctx)
	if err != nil {
		return err
	}
	lg, ok := listed[group]
	if !ok {
		return pageError{http.StatusNotFound, "group " + group + ": not found"}
	}
	if lg.State != "Empty" && lg.State != "Dead" {
		return pageError{http.StatusConflict, fmt.Sprintf("group %s is %s: offsets are reset only while it has no member", group, lg.State)}
	}
	details, err := r.adm.ListTopics(r.ctx, topic)
	if err != nil {
		return err
	}
	d, ok := details[topic]
	if !ok || d.Err != nil {
		return pageError{http.StatusNotFound, "topic " + topic + ": not found, or not yours to describe"}
	}
	partitions := d.Partitions.Numbers()
	if p := strings.TrimSpace(r.q.PostFormValue("partition")); p != "" {
		n, err := strconv.ParseInt(p, 10, 32)
		if _, has := d.Partitions[int32(n)]; err != nil || !has {
			return pageError{http.StatusBadRequest, fmt.Sprintf("topic %s has no partition %s", topic, p)}
		}
		partitions = []int32{int32(n)}
	}
	var listedOffsets kadm.ListedOffsets
	var at int64
	switch to {
	case "earliest":
		listedOffsets, err = r.adm.ListStartOffsets(r.ctx, topic)
	case "latest":
		listedOffsets, err = r.adm.ListEndOffsets(r.ctx, topic)
	case "timestamp":
		var ts int64
		if ts, err = parseTimestamp(r.q.PostFormValue("timestamp")); err != nil {
			return pageError{http.StatusBadRequest, err.Error()}
		}
		listedOffsets, err = r.adm.ListOffsetsAfterMilli(r.ctx, ts, topic)
	case "offset":
		if at, err = strconv.ParseInt(strings.TrimSpace(r.q.PostFormValue("offset")), 10, 64); err != nil || at < 0 {
			return pageError{http.StatusBadRequest, "offset: not an offset"}
		}
	default:
		return pageError{http.StatusBadRequest, "reset to: earliest, latest, timestamp or offset"}
	}
	if err != nil {
		return err
	}
	offsets := kadm.Offsets{}
	var ends kadm.ListedOffsets
	if to == "timestamp" || to == "offset" {
		if ends, err = r.adm.ListEndOffsets(r.ctx, topic); err != nil {
			return err
		}
	}
	var moved []string
	for _, p := range partitions {
		off := at
		if listedOffsets != nil {
			o, ok := listedOffsets.Lookup(topic, p)
			if !ok || o.Err != nil {
				return fmt.Errorf("the offset of %s[%d]: %v", topic, p, o.Err)
			}
			off = o.Offset
		}
		if ends != nil { // after the last record's timestamp, or past the end: the end
			if e, ok := ends.Lookup(topic, p); ok && e.Err == nil && (off < 0 || off > e.Offset) {
				off = e.Offset
			}
		}
		offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: off, LeaderEpoch: -1})
		moved = append(moved, fmt.Sprintf("%d→%d", p, off))
	}
	if groupType(lg) == "share" {
		resps, err := r.adm.AlterShareGroupOffsets(r.ctx, group, offsets)
		if err != nil {
			return err
		}
		if err := resps.Error(); err != nil {
			return err
		}
	} else {
		resps, err := r.adm.CommitOffsets(r.ctx, group, offsets)
		if err != nil {
			return err
		}
		if err := resps.Error(); err != nil {
			return err
		}
	}
	sort.Strings(moved)
	return r.doneAs("reset", back, fmt.Sprintf("Offsets of %s on %s reset: partition %s.", group, topic, strings.Join(moved, ", ")), nil)
}

func (r *request) deleteGroup() error {
	group := r.q.PathValue("group")
	resp, err := r.adm.DeleteGroup(r.ctx, group)
	if err == nil {
		err = resp.Err
	}
	return r.done("/groups", "Group "+group+" deleted.", err)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func topicsSet(ts kadm.TopicsSet) string {
	var parts []string
	for _, t := range ts.Sorted() {
		parts = append(parts, fmt.Sprintf("%s %v", t.Topic, t.Partitions))
	}
	return strings.Join(parts, "; ")
}

func tasks(a kmsg.StreamsAssignment) string {
	var parts []string
	for _, kind := range []struct {
		name string
		ids  []kmsg.TaskIDs
	}{{"active", a.ActiveTasks}, {"standby", a.StandbyTasks}, {"warmup", a.WarmupTasks}} {
		for _, t := range kind.ids {
			parts = append(parts, fmt.Sprintf("%s %s %v", kind.name, t.SubtopologyID, t.Partitions))
		}
	}
	return strings.Join(parts, "; ")
}
