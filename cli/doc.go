// Package cli is petrel's command line: urfave/cli/v2 commands that map flags to
// broker configuration, handle signals and print results. Admin commands are Kafka
// clients (franz-go kgo/kadm). No broker logic lives here.
package cli
