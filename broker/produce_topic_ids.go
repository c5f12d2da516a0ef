package broker

// Produce v13 names topics by id (KIP-516 on the data path): the handler and the
// authorization work on names, so each id the image knows is given its topic's name
// first; an id it does not know keeps an empty name and is answered UNKNOWN_TOPIC_ID
// for every partition, so that a topic deleted and re-created under the same name is
// never written through an id of the old one.

import (
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// resolveProduceTopicIDs names r's topics by their ids (v13+; earlier versions are
// left alone). Idempotent.
func resolveProduceTopicIDs(im *metadata.Image, r *kmsg.ProduceRequest) {
	if r.Version < 13 {
		return
	}
	for i := range r.Topics {
		t := &r.Topics[i]
		t.Topic = ""
		if tp := im.TopicByID(metadata.Uuid(t.TopicID)); tp != nil {
			t.Topic = tp.Name
		}
	}
}
