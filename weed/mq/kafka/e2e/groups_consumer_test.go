package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// memberProcessEnv, set, makes the test binary a librdkafka group member
// of its own (see runMemberProcess): a process the test can kill.
const memberProcessEnv = "E2E_MEMBER_PROCESS"

// runMemberProcess is a librdkafka consumer of the consumer group protocol
// (group.protocol=consumer) run as its own process, spec
// "bootstrap,group,topic,client id". It writes a line per event to stdout,
// each beginning with the time in Unix nanoseconds: "assigned P",
// "revoked P", "record P OFFSET VALUE", "committed P OFFSET", "closing".
// It commits
// after 20 records, when idle and when its partitions are revoked;
// SIGUSR1 makes it stop committing (as before a crash), SIGUSR2 makes it
// commit and close (leaving the group); SIGTERM and SIGINT are SeaweedFS's
// (its packages, imported by the tests, exit at once on them).
func runMemberProcess(spec string) int {
	f := strings.SplitN(spec, ",", 4)
	if len(f) != 4 {
		fmt.Fprintln(os.Stderr, "member process: bad spec", spec)
		return 2
	}
	emit := func(format string, args ...any) {
		fmt.Fprintf(os.Stdout, "%d "+format+"\n", append([]any{time.Now().UnixNano()}, args...)...)
	}
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": f[0], "group.id": f[1], "client.id": f[3], "group.protocol": "consumer",
		"auto.offset.reset": "earliest", "enable.auto.commit": false, "fetch.wait.max.ms": 200,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "member process:", err)
		return 1
	}
	var noCommit bool
	commit := func() {
		if noCommit {
			return
		}
		parts, err := c.Commit()
		if err != nil {
			if ke, ok := err.(kafka.Error); !ok || ke.Code() != kafka.ErrNoOffset {
				fmt.Fprintln(os.Stderr, "member process: commit:", err)
			}
			return
		}
		for _, p := range parts {
			if p.Error == nil && p.Offset >= 0 {
				emit("committed %d %d", p.Partition, int64(p.Offset))
			}
		}
	}
	rebalance := func(_ *kafka.Consumer, ev kafka.Event) error {
		switch e := ev.(type) {
		case kafka.AssignedPartitions:
			for _, p := range e.Partitions {
				emit("assigned %d", p.Partition)
			}
		case kafka.RevokedPartitions:
			commit() // before another member gets them
			for _, p := range e.Partitions {
				emit("revoked %d", p.Partition)
			}
		}
		return nil
	}
	if err := c.SubscribeTopics([]string{f[2]}, rebalance); err != nil {
		fmt.Fprintln(os.Stderr, "member process:", err)
		return 1
	}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGUSR1, syscall.SIGUSR2)
	read := 0
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); {
		select {
		case s := <-signals:
			if s == syscall.SIGUSR1 {
				noCommit = true
				continue
			}
			commit()
			emit("closing") // it consumes nothing more
			c.Close()       //nolint:errcheck // leaving
			return 0
		default:
		}
		msg, err := c.ReadMessage(200 * time.Millisecond)
		if err != nil {
			if ke, ok := err.(kafka.Error); ok && ke.IsTimeout() {
				if read > 0 {
					commit()
					read = 0
				}
			} else {
				fmt.Fprintln(os.Stderr, "member process:", err)
			}
			continue
		}
		emit("record %d %d %s", msg.TopicPartition.Partition, int64(msg.TopicPartition.Offset), msg.Value)
		if read++; read == 20 {
			commit()
			read = 0
		}
	}
	return 0
}

// memberEvent is a line of a member process.
type memberEvent struct {
	at     int64
	member string
	kind   string
	fields []string
}

// memberProcs runs member processes and gathers their events.
type memberProcs struct {
	t      *testing.T
	group  string
	topic  string
	mu     sync.Mutex
	events []memberEvent
	procs  map[string]*exec.Cmd
	log    *consumedLog
}

func (mp *memberProcs) start(name string) {
	t := mp.t
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberProcessEnv+"="+strings.Join([]string{gw.addr, mp.group, mp.topic, name}, ","))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	mp.procs[name] = cmd
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // may have ended
		cmd.Wait()         //nolint:errcheck // killed
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 {
				continue
			}
			at, _ := strconv.ParseInt(f[0], 10, 64)
			ev := memberEvent{at: at, member: name, kind: f[1], fields: f[2:]}
			if ev.kind == "record" && len(f) == 5 {
				p, _ := strconv.Atoi(f[2])
				o, _ := strconv.ParseInt(f[3], 10, 64)
				mp.log.add(name, int32(p), o, []byte(f[4]))
			}
			mp.mu.Lock()
			mp.events = append(mp.events, ev)
			mp.mu.Unlock()
		}
	}()
}

func (mp *memberProcs) signal(name string, s os.Signal) {
	if err := mp.procs[name].Process.Signal(s); err != nil {
		mp.t.Fatal(err)
	}
}

// killed records a SIGKILL: a dead member owns nothing from then on.
func (mp *memberProcs) kill(name string) {
	mp.signal(name, syscall.SIGKILL)
	mp.procs[name].Wait() //nolint:errcheck // killed
	mp.mu.Lock()
	mp.events = append(mp.events, memberEvent{at: time.Now().UnixNano(), member: name, kind: "killed"})
	mp.mu.Unlock()
}

// owners replays the events in time order: who owns what now, and any
// partition given to a member while another owned it.
func (mp *memberProcs) owners() (map[int32]string, []string) {
	mp.mu.Lock()
	evs := slices.Clone(mp.events)
	mp.mu.Unlock()
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	owner := map[int32]string{}
	var overlaps []string
	for _, ev := range evs {
		switch ev.kind {
		case "assigned", "revoked":
			p64, _ := strconv.Atoi(ev.fields[0])
			p := int32(p64)
			if ev.kind == "revoked" {
				if owner[p] == ev.member {
					delete(owner, p)
				}
				continue
			}
			if o, ok := owner[p]; ok && o != ev.member {
				overlaps = append(overlaps, fmt.Sprintf("partition %d given to %s while %s owned it", p, ev.member, o))
			}
			owner[p] = ev.member
		case "killed", "closing":
			for p, o := range owner {
				if o == ev.member {
					delete(owner, p)
				}
			}
		}
	}
	return owner, overlaps
}

// lastCommits are the offsets a member reported committed, by partition.
func (mp *memberProcs) lastCommits(member string) map[int32]int64 {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	out := map[int32]int64{}
	for _, ev := range mp.events {
		if ev.member == member && ev.kind == "committed" {
			p, _ := strconv.Atoi(ev.fields[0])
			o, _ := strconv.ParseInt(ev.fields[1], 10, 64)
			out[int32(p)] = o
		}
	}
	return out
}

// waitOwned waits until each member owns want partitions.
func (mp *memberProcs) waitOwned(want map[string]int) {
	mp.t.Helper()
	eventually(mp.t, 60*time.Second, fmt.Sprintf("partitions owned %v", want), func() error {
		owner, _ := mp.owners()
		got := map[string]int{}
		for _, o := range owner {
			got[o]++
		}
		for m, n := range want {
			if got[m] != n {
				return fmt.Errorf("owned %v", owner)
			}
		}
		if len(got) != len(want) {
			return fmt.Errorf("owned %v", owner)
		}
		return nil
	})
}

// TestGroupConsumerProtocolConfluent: librdkafka members of a consumer
// group of the KIP-848 protocol (group.protocol=consumer), each its own
// process, share six partitions two each; one leaves and the other two
// take its partitions, before its session would have expired; one is
// killed with records consumed but not committed, and the last takes its
// partitions once its session (the gateway's, 6 s) ends, resuming at its
// last commit. No partition is ever owned by two members; every record is
// consumed, none twice but the killed member's uncommitted ones; the
// commits end at the high watermarks and the group is Empty at the end.
func TestGroupConsumerProtocolConfluent(t *testing.T) {
	topic := newTopic(t)
	group := topic + "-group"
	createTopic(t, topic, 6, nil)
	produced := map[int32][]string{}
	produceBatch(t, topic, 0, 600, produced)
	log := &consumedLog{}
	mp := &memberProcs{t: t, group: group, topic: topic, procs: map[string]*exec.Cmd{}, log: log}
	for _, name := range []string{"rdk-1", "rdk-2", "rdk-3"} {
		mp.start(name)
	}
	mp.waitOwned(map[string]int{"rdk-1": 2, "rdk-2": 2, "rdk-3": 2})
	waitShared(t, group, topic, 6, "rdk-1", "rdk-2", "rdk-3")
	waitConsumed(t, log, produced)

	// rdk-1 leaves: the others take its partitions at once.
	left := time.Now()
	mp.signal("rdk-1", syscall.SIGUSR2)
	mp.waitOwned(map[string]int{"rdk-2": 3, "rdk-3": 3})
	if took := time.Since(left); took >= groupSession {
		t.Errorf("rdk-1's partitions moved %v after it left, not before its session would expire", took)
	}
	produceBatch(t, topic, 600, 300, produced)
	waitConsumed(t, log, produced)
	waitCommitted(t, group, topic, highWatermarks(t, topic, produced))

	// rdk-2 stops committing, consumes more, and is killed.
	mp.signal("rdk-2", syscall.SIGUSR1)
	time.Sleep(300 * time.Millisecond) // the signal handled before the records come
	before := len(log.snapshot())
	produceBatch(t, topic, 900, 300, produced)
	eventually(t, 30*time.Second, "rdk-2 consumes records it does not commit", func() error {
		for _, c := range log.snapshot()[before:] {
			if c.member == "rdk-2" {
				return nil
			}
		}
		return fmt.Errorf("none yet")
	})
	commitsAtKill := mp.lastCommits("rdk-2")
	killedAt := time.Now()
	killSeq := len(log.snapshot())
	mp.kill("rdk-2")
	mp.waitOwned(map[string]int{"rdk-3": 6})
	if took := time.Since(killedAt); took < groupSession-2*time.Second {
		t.Errorf("rdk-2's partitions moved %v after it was killed, before its %v session ended", took, groupSession)
	}
	waitConsumed(t, log, produced)
	hwm := highWatermarks(t, topic, produced)
	waitCommitted(t, group, topic, hwm)

	// Only rdk-2's uncommitted records came twice, the second time after
	// the kill.
	seen, _ := byRecord(t, log.snapshot(), produced)
	for at, cs := range seen {
		if len(cs) == 1 {
			continue
		}
		first := cs[0]
		if len(cs) > 2 || first.member != "rdk-2" || at.offset < commitsAtKill[at.partition] || cs[1].seq < killSeq {
			t.Errorf("%d/%d consumed %d times: %+v", at.partition, at.offset, len(cs), cs)
		}
	}
	if _, overlaps := mp.owners(); len(overlaps) > 0 {
		for _, o := range overlaps {
			t.Error(o)
		}
	}

	mp.signal("rdk-3", syscall.SIGUSR2)
	waitGroup(t, group, topic, "Empty")
	waitCommitted(t, group, topic, hwm)
}
