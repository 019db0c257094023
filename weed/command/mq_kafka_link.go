package command

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seaweedfs-kafka/gateway/weed/mq/kafka/link"

	swcommand "github.com/seaweedfs/seaweedfs/weed/command"
)

// MqKafkaLink is `weed mq.kafka.link`: topic links, through any gateway's
// HTTP API.
var MqKafkaLink = &swcommand.Command{
	UsageLine: "mq.kafka.link create|list|pause|resume|promote|delete -bootstrap=<gateway console> -name=<link> ...",
	Short:     "mirror topics from another Kafka cluster at their offsets (topic links)",
	Long: `Manage topic links: a gateway cluster pulls topics from another Kafka
cluster (Apache Kafka 2.8 on, or another gateway cluster) and writes every
batch at the offset it has there, so that consumer groups resume on the
gateway exactly where they were. Mirror topics are read-only until promoted.

Each action talks to a gateway's HTTP API (-console.listeners):

  create  -name=<link> -source=<host:port,...> -topics=<regex>
          [-groups=<regex>] [-acls] [-source.security.protocol=PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL]
          [-source.sasl.mechanism=PLAIN|SCRAM-SHA-256|SCRAM-SHA-512
           -source.sasl.username=<user> -source.sasl.password=<password>]
          [-source.ssl.ca=<PEM file>] [-source.ssl.insecure]
  list    every link, its state, its topics and how far behind each is
  pause   -name=<link>        stop pulling (the topics stay read-only)
  resume  -name=<link>
  promote -name=<link> [-topic=<t>] [-force]
          make the link's topics (or one) writable once they caught up with
          the source; -force: at once (the source is lost)
  delete  -name=<link>        stop the link; its topics stay, writable

Common flags:
  -bootstrap  the gateway's HTTP API, http(s)://host:port or host:port
              (default http://127.0.0.1:8080)
  -user, -password  HTTP basic auth, a user of the gateway's (when it has a
              SASL listener); the password also from KAFKA_LINK_PASSWORD
  -ca         PEM file the API's https certificate is checked against

  weed mq.kafka.link create -name=from-kafka -source=kafka1:9092 -topics='orders|payments' -groups='.*'
  weed mq.kafka.link list
  weed mq.kafka.link promote -name=from-kafka
`,
}

func init() {
	MqKafkaLink.Run = runMqKafkaLink
}

func runMqKafkaLink(_ *swcommand.Command, args []string) bool {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "weed mq.kafka.link: an action: create, list, pause, resume, promote or delete")
		return false
	}
	action := args[0]
	f := flag.NewFlagSet("mq.kafka.link "+action, flag.ContinueOnError)
	bootstrap := f.String("bootstrap", "http://127.0.0.1:8080", "the gateway's HTTP API")
	user := f.String("user", "", "HTTP basic auth user")
	password := f.String("password", os.Getenv("KAFKA_LINK_PASSWORD"), "HTTP basic auth password")
	name := f.String("name", "", "the link")
	source := f.String("source", "", "the source cluster's bootstrap servers, host:port,...")
	topics := f.String("topics", "", "the source's topics to mirror, a regular expression")
	groups := f.String("groups", "", "the source's consumer groups whose offsets are copied, a regular expression")
	acls := f.Bool("acls", false, "copy the source's ACLs of the mirrored topics and groups")
	protocol := f.String("source.security.protocol", "PLAINTEXT", "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
	mechanism := f.String("source.sasl.mechanism", "PLAIN", "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	saslUser := f.String("source.sasl.username", "", "the source's SASL user")
	saslPassword := f.String("source.sasl.password", "", "the source's SASL password")
	sslCA := f.String("source.ssl.ca", "", "PEM file of the CAs the source's certificate is checked against")
	insecure := f.Bool("source.ssl.insecure", false, "do not check the source's certificate")
	topic := f.String("topic", "", "promote: only this topic")
	force := f.Bool("force", false, "promote: without waiting to catch up")
	caFile := f.String("ca", "", "PEM file the API's https certificate is checked against")
	if err := f.Parse(args[1:]); err != nil {
		return false
	}
	api := &linkAPI{base: *bootstrap, user: *user, password: *password}
	if !strings.Contains(api.base, "://") {
		api.base = "http://" + api.base
	}
	api.base = strings.TrimRight(api.base, "/")
	client, err := httpClient(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return false
	}
	api.client = client
	needName := func() bool {
		if *name == "" {
			fmt.Fprintln(os.Stderr, "weed mq.kafka.link "+action+": -name is needed")
			return false
		}
		return true
	}
	var out any
	switch action {
	case "create":
		if !needName() {
			return false
		}
		cfg := link.Config{Name: *name, Topics: *topics, Groups: *groups, ACLs: *acls, Source: link.Source{
			Bootstrap: strings.Split(*source, ","), SecurityProtocol: *protocol,
		}}
		if *source == "" {
			cfg.Source.Bootstrap = nil
		}
		if strings.HasPrefix(*protocol, "SASL") {
			cfg.Source.SASLMechanism, cfg.Source.SASLUser, cfg.Source.SASLPassword = *mechanism, *saslUser, *saslPassword
		}
		if *sslCA != "" {
			pem, err := os.ReadFile(*sslCA)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return false
			}
			cfg.Source.SSLCA = string(pem)
		}
		cfg.Source.SSLInsecure = *insecure
		var created link.Config
		if err = api.do("POST", "/api/links", cfg, &created); err == nil {
			fmt.Printf("link %s created: mirroring %q from %s\n", created.Name, created.Topics, strings.Join(created.Source.Bootstrap, ","))
		}
	case "list":
		var links []link.Link
		if err = api.do("GET", "/api/links", nil, &links); err == nil {
			printLinks(os.Stdout, links)
		}
	case "pause", "resume":
		if !needName() {
			return false
		}
		err = api.do("POST", "/api/links/"+url.PathEscape(*name)+"/"+action, nil, &out)
		if err == nil {
			fmt.Printf("link %s: %sd\n", *name, action)
		}
	case "promote":
		if !needName() {
			return false
		}
		q := url.Values{}
		if *topic != "" {
			q.Set("topic", *topic)
		}
		if *force {
			q.Set("force", "true")
		}
		err = api.do("POST", "/api/links/"+url.PathEscape(*name)+"/promote?"+q.Encode(), nil, &out)
		if err == nil {
			what := "its topics"
			if *topic != "" {
				what = "topic " + *topic
			}
			fmt.Printf("link %s: %s promoted once caught up (see weed mq.kafka.link list)\n", *name, what)
		}
	case "delete":
		if !needName() {
			return false
		}
		if err = api.do("DELETE", "/api/links/"+url.PathEscape(*name), nil, &out); err == nil {
			fmt.Printf("link %s deleted\n", *name)
		}
	default:
		err = fmt.Errorf("no action %q: create, list, pause, resume, promote or delete", action)
	}
	if err != nil {
		// The request was made and failed: its error, not the usage.
		fmt.Fprintln(os.Stderr, "weed mq.kafka.link "+action+": "+err.Error())
		os.Exit(1)
	}
	return true
}

type linkAPI struct {
	base, user, password string
	client               *http.Client
}

// do sends a request with body as JSON and reads the answer into out.
func (a *linkAPI) do(method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, a.base+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if a.user != "" {
		req.SetBasicAuth(a.user, a.password)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s (HTTP %d)", e.Error, resp.StatusCode)
		}
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(data))
	}
	return json.Unmarshal(data, out)
}

// printLinks prints each link with its state and its topics' lag.
func printLinks(w io.Writer, links []link.Link) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	if len(links) == 0 {
		fmt.Fprintln(tw, "no links")
		return
	}
	now := time.Now()
	for _, l := range links {
		state := "starting"
		var st *link.Status
		if l.Status != nil {
			st = l.Status
			state = st.State
			if l.Config.Paused && state != link.StatePaused {
				state = link.StatePaused
			}
		}
		fmt.Fprintf(tw, "LINK %s\t%s\tsource %s\ttopics %q\tgroups %q\n", l.Config.Name, state, strings.Join(l.Config.Source.Bootstrap, ","), l.Config.Topics, l.Config.Groups)
		if st == nil {
			continue
		}
		if st.Error != "" {
			fmt.Fprintf(tw, "  error\t%s\n", st.Error)
		}
		names := make([]string, 0, len(st.Topics))
		for t := range st.Topics {
			names = append(names, t)
		}
		sort.Strings(names)
		fmt.Fprintln(tw, "  TOPIC\tSTATE\tPARTITIONS\tLAG (records)\tBEHIND (s)\tNOTE")
		for _, t := range names {
			ts := st.Topics[t]
			var lag int64
			var secs float64
			for _, pl := range ts.Lag {
				lag += pl.Records()
				secs = max(secs, pl.Seconds(now))
			}
			note := ts.Error
			if len(ts.Refused) > 0 {
				keys := make([]string, 0, len(ts.Refused))
				for k := range ts.Refused {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				note = strings.TrimSpace(note + " configs not taken: " + strings.Join(keys, ","))
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%.1f\t%s\n", t, ts.State, ts.Partitions, lag, secs, note)
		}
		for g, gs := range st.Groups {
			synced := "never"
			if gs.Synced > 0 {
				synced = time.UnixMilli(gs.Synced).Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "  group %s\toffsets copied %s\t%s\n", g, synced, gs.Error)
		}
	}
}

// httpClient is a client of the gateway's API, checking its https
// certificate against caFile's when given.
func httpClient(caFile string) (*http.Client, error) {
	c := &http.Client{Timeout: 60 * time.Second}
	if caFile == "" {
		return c, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no certificate", caFile)
	}
	c.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return c, nil
}
