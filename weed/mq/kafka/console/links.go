package console

import (
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/link"
)

// linkRow is a link as the page shows it.
type linkRow struct {
	Name, Source, Topics, State, Error string
	Paused                             bool
	Lag                                int64
	Updated                            time.Time
	Mirrors                            []mirrorRow
}

type mirrorRow struct {
	Topic, State, Error string
	Partitions          int32
	Lag                 int64
}

// linksPage shows the topic links (DESCRIBE on the cluster, as their API
// asks).
func (r *request) linksPage() error {
	if r.c.opts.Links == nil {
		return pageError{http.StatusNotFound, "this gateway keeps no topic links"}
	}
	if !r.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, "kafka-cluster") {
		return pageError{http.StatusForbidden, r.principal + " may not describe the cluster"}
	}
	links, err := r.c.opts.Links.List(r.ctx)
	if err != nil {
		return err
	}
	var rows []linkRow
	for _, l := range links {
		row := linkRow{Name: l.Config.Name, Source: strings.Join(l.Config.Source.Bootstrap, ","), Topics: l.Config.Topics, Paused: l.Config.Paused, State: "starting"}
		if st := l.Status; st != nil {
			row.State, row.Error, row.Updated = st.State, st.Error, time.UnixMilli(st.Updated)
			for name, ts := range st.Topics {
				m := mirrorRow{Topic: name, State: ts.State, Error: ts.Error, Partitions: ts.Partitions}
				for _, pl := range ts.Lag {
					m.Lag += pl.Records()
				}
				row.Lag += m.Lag
				row.Mirrors = append(row.Mirrors, m)
			}
			sort.Slice(row.Mirrors, func(i, j int) bool { return row.Mirrors[i].Topic < row.Mirrors[j].Topic })
		}
		rows = append(rows, row)
	}
	r.data["Links"] = rows
	r.data["CanChange"] = r.allowed(kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, "kafka-cluster")
	return r.render("links", http.StatusOK)
}

// linkAction pauses, resumes or promotes a link (a topic of it with
// topic=), as the links' API does.
func (r *request) linkAction() error {
	if r.c.opts.Links == nil {
		return pageError{http.StatusNotFound, "this gateway keeps no topic links"}
	}
	if !r.allowed(kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, "kafka-cluster") {
		return pageError{http.StatusForbidden, r.principal + " may not alter the cluster"}
	}
	name, action := r.q.PathValue("name"), r.q.PathValue("action")
	var change func(*link.Config) error
	switch action {
	case "pause":
		change = func(c *link.Config) error { c.Paused = true; return nil }
	case "resume":
		change = func(c *link.Config) error { c.Paused = false; return nil }
	case "promote":
		topic := orDefault(r.q.PostFormValue("topic"), "*")
		force := r.q.PostFormValue("force") == "true"
		change = func(c *link.Config) error {
			if c.Promote == nil {
				c.Promote = map[string]link.Promotion{}
			}
			c.Promote[topic] = link.Promotion{Force: force, At: time.Now().UnixMilli()}
			return nil
		}
	default:
		return pageError{http.StatusNotFound, "no such action: pause, resume or promote"}
	}
	err := r.c.opts.Links.Update(r.ctx, name, change)
	if err == nil && r.c.opts.LinksChanged != nil {
		r.c.opts.LinksChanged()
	}
	return r.doneAs("link", "/links", "Link "+name+": "+action+" asked.", err)
}
