package integration

// A paused process (SIGSTOP) is alive: its kernel still accepts connections on its
// listeners, nothing it holds is refused, so no evidence fences it (P17 item 6) and the
// new controller's probe of a paused old controller connects (item 5). Only its session
// may fence it. Real processes, because only a real process can be paused with its
// listeners still accepting.

import (
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Sessions of the pause tests: long enough that a pause of pauseShort stays inside it
// whatever the machine's load, short enough that a pause past it is a short test.
const (
	pauseSession   = 6 * time.Second
	pauseHeartbeat = 500 * time.Millisecond
	// pauseShort is how long a paused controller stays stopped: long enough for an
	// election, well inside its session.
	pauseShort = 3 * time.Second
)

// TestProcessPausedBrokerNotFencedEarly: a paused partition leader, with followers
// fetching from it under an acks=all load, is fenced by its session (no earlier than
// one session after its last heartbeat), never on evidence; a paused controller loses
// the election but stays registered and unfenced, and both rejoin once resumed.
func TestProcessPausedBrokerNotFencedEarly(t *testing.T) {
	bin := procBuildPetrel(t)
	t.Run("leader", func(t *testing.T) { runProcPause(t, bin, false) })
	t.Run("controller", func(t *testing.T) { runProcPause(t, bin, true) })
}

func runProcPause(t *testing.T, bin string, controller bool) {
	c := procStartClusterWith(t, bin,
		"broker.session.timeout.ms="+strconv.Itoa(int(pauseSession.Milliseconds())),
		"broker.heartbeat.interval.ms="+strconv.Itoa(int(pauseHeartbeat.Milliseconds())))
	const topic = "paused"
	benchCreateTopic(t, c.addrs(), topic, 6, 3, "min.insync.replicas", "2")
	c.benchHealthy(t, topic)
	stop := benchBackgroundProducer(t, c.addrs(), topic)
	defer stop()
	m, err := benchMetadata(c.addrs(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var victim *procNode
	if controller {
		victim = c.nodes[m.Controller]
	} else if victim, _ = c.benchLeaderVictim(m, topic); victim == nil {
		t.Fatalf("no broker but the controller %d leads a partition: %+v", m.Controller, m.Topics[topic].Partitions)
	}
	survivors := c.seedsWithout(victim.id)
	// listed reports whether the survivors' Metadata lists the victim (only unfenced
	// brokers are listed) and which controller it names.
	listed := func() (bool, int32, error) {
		m, err := benchMetadata(survivors)
		if err != nil {
			return false, -1, err
		}
		return slices.Contains(m.Brokers.NodeIDs(), victim.id), m.Controller, nil
	}

	victim.signal(t, syscall.SIGSTOP)
	stopped := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			victim.signal(t, syscall.SIGCONT)
		}
	}()
	if controller {
		newController := false
		for time.Since(stopped) < pauseShort || !newController {
			if time.Since(stopped) > pauseSession-pauseHeartbeat {
				t.Fatalf("no new controller %s after the controller paused", time.Since(stopped).Round(time.Millisecond))
			}
			ok, ctrl, err := listed()
			if err == nil && !ok {
				t.Fatalf("the paused controller %d was fenced %s after it paused, inside its session (%s)",
					victim.id, time.Since(stopped).Round(time.Millisecond), pauseSession)
			}
			newController = newController || (err == nil && ctrl >= 0 && ctrl != victim.id)
			time.Sleep(50 * time.Millisecond) // polling other processes: nothing to wait on
		}
		t.Logf("controller %d paused %s: a new controller was elected, it stayed unfenced", victim.id, time.Since(stopped).Round(time.Millisecond))
	} else {
		for {
			ok, _, err := listed()
			if err == nil && !ok {
				break
			}
			if time.Since(stopped) > pauseSession+procPollMargin+5*time.Second {
				t.Fatalf("the paused broker %d is not fenced %s after it paused", victim.id, time.Since(stopped).Round(time.Millisecond))
			}
			time.Sleep(50 * time.Millisecond) // polling other processes: nothing to wait on
		}
		// The last heartbeat came at most one interval before the pause.
		took := time.Since(stopped)
		if took < pauseSession-pauseHeartbeat {
			t.Fatalf("the paused broker %d was fenced %s after it paused, before its session (%s) could expire",
				victim.id, took.Round(time.Millisecond), pauseSession)
		}
		t.Logf("paused leader %d fenced %s after it paused (session %s)", victim.id, took.Round(time.Millisecond), pauseSession)
	}
	victim.signal(t, syscall.SIGCONT)
	resumed = true
	c.benchHealthy(t, topic)
	if err := victim.exited(); err != nil {
		t.Fatal(err)
	}
	if m, err := benchMetadata(c.addrs()); err != nil || len(m.Brokers) != 3 {
		t.Fatalf("after the resume: brokers %v, %v", m.Brokers.NodeIDs(), err)
	}
}
