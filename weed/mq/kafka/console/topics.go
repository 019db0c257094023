package console

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicRow is a line of the topics' list.
type topicRow struct {
	Name       string
	Internal   bool
	Partitions int
	Size       int64 // -1: not known
	InRate     float64
	OutRate    float64
	HasRates   bool
	Cleanup    string
	Retention  string
	Iceberg    string
	Link       string
	LinkState  string
	Lag        int64
	HasLag     bool
}

// rates keeps, per topic, the last sum of its end offsets and of its
// groups' commits, to show records in and out per second.
type rates struct {
	mu   sync.Mutex
	last map[string]rateSample
}

type rateSample struct {
	at            time.Time
	ends, commits int64
}

// measure records the sums seen now and returns the rates since the last
// sample (ok false without one from the last five minutes).
func (rs *rates) measure(topic string, ends, commits int64) (in, out float64, ok bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.last == nil {
		rs.last = map[string]rateSample{}
	}
	now := time.Now()
	prev, had := rs.last[topic]
	if !had || now.Sub(prev.at) > 5*time.Minute {
		rs.last[topic] = rateSample{now, ends, commits}
		return 0, 0, false
	}
	d := now.Sub(prev.at).Seconds()
	if d < 1 {
		return 0, 0, false // keep the older sample: a second at least
	}
	rs.last[topic] = rateSample{now, ends, commits}
	return max(float64(ends-prev.ends)/d, 0), max(float64(commits-prev.commits)/d, 0), true
}

// topicsPage lists the topics whose name holds q, a page at a time.
func (r *request) topicsPage() error {
	q := strings.TrimSpace(r.q.URL.Query().Get("q"))
	pageNo, _ := strconv.Atoi(r.q.URL.Query().Get("page"))
	details, err := r.adm.ListTopicsWithInternal(r.ctx)
	if err != nil {
		return err
	}
	var names []string
	for name, d := range details {
		if d.Err != nil {
			continue // not described: no DESCRIBE on it
		}
		if q == "" || strings.Contains(name, q) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	from, to, more := pageBounds(len(names), pageNo)
	shown := names[from:to]

	rows := make([]topicRow, len(shown))
	var wg sync.WaitGroup
	var sizes kadm.DescribedAllLogDirs
	var configs kadm.ResourceConfigs
	var ends kadm.ListedOffsets
	var lag *lagSnapshot
	var links map[string][2]string
	if len(shown) > 0 {
		wg.Add(5)
		set := kadm.TopicsSet{}
		for _, name := range shown {
			for _, p := range details[name].Partitions {
				set.Add(name, p.Partition)
			}
		}
		go func() { defer wg.Done(); sizes, _ = r.adm.DescribeAllLogDirs(r.ctx, set) }()
		go func() { defer wg.Done(); configs, _ = r.adm.DescribeTopicConfigs(r.ctx, shown...) }()
		parts := map[string][]int32{}
		set.EachPartitions(func(t string, ps []int32) { parts[t] = ps })
		go func() { defer wg.Done(); ends, _ = listOffsets(r.ctx, r.cl, parts, latest) }()
		go func() { defer wg.Done(); lag = r.lag() }()
		go func() { defer wg.Done(); links = r.linkOfTopics() }()
		wg.Wait()
	}
	size := map[string]int64{}
	sizes.Each(func(d kadm.DescribedLogDir) {
		for t, ps := range d.Topics {
			for _, p := range ps {
				size[t] += p.Size
			}
		}
	})
	conf := map[string]map[string]string{}
	for _, rc := range configs {
		m := map[string]string{}
		for _, c := range rc.Configs {
			if c.Value != nil {
				m[c.Key] = *c.Value
			}
		}
		conf[rc.Name] = m
	}
	for i, name := range shown {
		d := details[name]
		row := topicRow{Name: name, Internal: d.IsInternal, Partitions: len(d.Partitions), Size: -1}
		if s, ok := size[name]; ok {
			row.Size = s
		}
		if m := conf[name]; m != nil {
			row.Cleanup = m["cleanup.policy"]
			row.Retention = retention(m["retention.ms"], m["retention.bytes"])
			row.Iceberg = m["iceberg.mode"]
		}
		var endSum int64
		for _, o := range ends[name] {
			if o.Err == nil {
				endSum += o.Offset
			}
		}
		var commits int64
		if lag != nil {
			row.Lag, row.HasLag = lag.byTopic[name]
			commits = lag.consumed[name]
		}
		row.InRate, row.OutRate, row.HasRates = r.c.rates.measure(name, endSum, commits)
		if l, ok := links[name]; ok {
			row.Link, row.LinkState = l[0], l[1]
		}
		rows[i] = row
	}
	r.data["Q"] = q
	r.data["Rows"] = rows
	r.data["Total"] = len(names)
	r.data["PageNo"] = pageNo
	r.data["From"] = from + 1
	r.data["To"] = to
	r.data["More"] = more
	if lag != nil && lag.err != nil {
		r.data["LagError"] = lag.err.Error()
	}
	return r.render("topics", http.StatusOK)
}

// retention says how long and how much a topic keeps.
func retention(ms, bytes string) string {
	var parts []string
	if n, err := strconv.ParseInt(ms, 10, 64); err == nil {
		if n < 0 {
			parts = append(parts, "forever")
		} else {
			parts = append(parts, (time.Duration(n) * time.Millisecond).String())
		}
	}
	if n, err := strconv.ParseInt(bytes, 10, 64); err == nil && n >= 0 {
		parts = append(parts, humanBytes(n))
	}
	return strings.Join(parts, ", ")
}

// linkOfTopics names, for each mirror topic, its link and its state (nil
// without links, or without DESCRIBE on the cluster).
func (r *request) linkOfTopics() map[string][2]string {
	if r.c.opts.Links == nil || !r.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, "kafka-cluster") {
		return nil
	}
	links, err := r.c.opts.Links.List(r.ctx)
	if err != nil {
		return nil
	}
	out := map[string][2]string{}
	for _, l := range links {
		if l.Status == nil {
			continue
		}
		for t, st := range l.Status.Topics {
			out[t] = [2]string{l.Config.Name, st.State}
		}
	}
	return out
}

// partitionRow is a line of a topic's partitions.
type partitionRow struct {
	Partition  int32
	Leader     int32
	Epoch      int32
	Start, End int64
	Size       int64
	Err        string
}

// topicPage shows a topic: its partitions, configs and the groups that
// consume it.
func (r *request) topicPage() error {
	topic := r.q.PathValue("topic")
	details, err := r.adm.ListTopicsWithInternal(r.ctx, topic)
	if err != nil {
		return err
	}
	d, ok := details[topic]
	if !ok || d.Err != nil {
		return pageError{http.StatusNotFound, fmt.Sprintf("topic %s: not found, or not yours to describe", topic)}
	}
	set := kadm.TopicsSet{}
	for _, p := range d.Partitions {
		set.Add(topic, p.Partition)
	}
	starts, ends, _ := startsAndEnds(r.ctx, r.cl, map[string][]int32{topic: d.Partitions.Numbers()})
	sizes, _ := r.adm.DescribeAllLogDirs(r.ctx, set)
	size := map[int32]int64{}
	sizes.Each(func(ld kadm.DescribedLogDir) {
		for _, p := range ld.Topics[topic] {
			size[p.Partition] += p.Size
		}
	})
	var parts []partitionRow
	for _, p := range d.Partitions.Sorted() {
		row := partitionRow{Partition: p.Partition, Leader: p.Leader, Epoch: p.LeaderEpoch, Start: -1, End: -1, Size: -1}
		if p.Err != nil {
			row.Err = p.Err.Error()
		}
		if o, ok := starts.Lookup(topic, p.Partition); ok && o.Err == nil {
			row.Start = o.Offset
		}
		if o, ok := ends.Lookup(topic, p.Partition); ok && o.Err == nil {
			row.End = o.Offset
		}
		if s, ok := size[p.Partition]; ok {
			row.Size = s
		}
		parts = append(parts, row)
	}
	var configs []kadm.Config
	if rc, err := r.adm.DescribeTopicConfigs(r.ctx, topic); err == nil && len(rc) == 1 && rc[0].Err == nil {
		configs = rc[0].Configs
		sort.Slice(configs, func(i, j int) bool { return configs[i].Key < configs[j].Key })
	}
	type groupLag struct {
		Group string
		Lag   int64
	}
	var groups []groupLag
	lag := r.lag()
	for g := range lag.groups {
		if committed, ok := lag.topicLagOf(g, topic); ok {
			groups = append(groups, groupLag{g, committed})
		}
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Group < groups[j].Group })
	r.data["Topic"] = topic
	r.data["ID"] = d.ID.String()
	r.data["Internal"] = d.IsInternal
	r.data["PartitionRows"] = parts
	r.data["Configs"] = configs
	r.data["Groups"] = groups
	return r.render("topic", http.StatusOK)
}

func (r *request) createTopic() error {
	name := strings.TrimSpace(r.q.PostFormValue("name"))
	partitions, err := strconv.Atoi(r.q.PostFormValue("partitions"))
	if err != nil || partitions == 0 {
		partitions = -1 // the cluster's default
	}
	configs := map[string]*string{}
	for _, line := range strings.Split(r.q.PostFormValue("configs"), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && k != "" {
			configs[strings.TrimSpace(k)] = ptr(strings.TrimSpace(v))
		}
	}
	resp, err := r.adm.CreateTopic(r.ctx, int32(partitions), -1, configs, name)
	if err == nil {
		err = resp.Err
		if err != nil && resp.ErrMessage != "" {
			err = fmt.Errorf("%w: %s", err, resp.ErrMessage)
		}
	}
	return r.done("/topics/"+pathEscape(name), "Topic "+name+" created.", err)
}

func (r *request) deleteTopic() error {
	topic := r.q.PathValue("topic")
	resp, err := r.adm.DeleteTopic(r.ctx, topic)
	if err == nil {
		err = resp.Err
	}
	return r.done("/topics", "Topic "+topic+" deleted.", err)
}

// alterTopicConfigs sets (or, with an empty value, deletes) one config.
func (r *request) alterTopicConfigs() error {
	topic := r.q.PathValue("topic")
	key, value := strings.TrimSpace(r.q.PostFormValue("key")), r.q.PostFormValue("value")
	ac := kadm.AlterConfig{Op: kadm.SetConfig, Name: key, Value: ptr(value)}
	if value == "" {
		ac = kadm.AlterConfig{Op: kadm.DeleteConfig, Name: key}
	}
	resps, err := r.adm.AlterTopicConfigs(r.ctx, []kadm.AlterConfig{ac}, topic)
	if err == nil {
		for _, resp := range resps {
			if resp.Err != nil {
				err = fmt.Errorf("%w %s", resp.Err, resp.ErrMessage)
			}
		}
	}
	return r.done("/topics/"+pathEscape(topic), key+" changed.", err)
}

func (r *request) addPartitions() error {
	topic := r.q.PathValue("topic")
	n, err := strconv.Atoi(r.q.PostFormValue("count"))
	if err != nil || n <= 0 {
		return pageError{http.StatusBadRequest, "the new number of partitions is missing"}
	}
	resps, err := r.adm.UpdatePartitions(r.ctx, n, topic)
	if err == nil {
		if resp, ok := resps[topic]; ok && resp.Err != nil {
			err = fmt.Errorf("%w %s", resp.Err, resp.ErrMessage)
		}
	}
	return r.done("/topics/"+pathEscape(topic), fmt.Sprintf("%s has %d partitions.", topic, n), err)
}

func ptr[T any](v T) *T { return &v }
