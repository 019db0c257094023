// Package kafka holds the Kafka gateway's packages, in layers: each imports
// only packages of the layers below it (layers_test.go checks it against
// `go list`, and that docs/layout.md names each package).
//
//	0  record, metrics, filerfs       the wire's records, the metrics, the filer's small files
//	   guard, storage, audit          panics turned into errors, logged and counted; the
//	                                  Backend contract between the handlers and storage;
//	                                  the audit log
//	1  offset, membership, acl,       what is kept in the filer: offsets, the gateways'
//	   user, quota, feature,          view, ACLs, users and delegation tokens, client
//	   telemetry, txn, share,         quotas, finalized features, client metrics
//	   seaweedmq/logentry, registry,  subscriptions; the transaction coordinator; share
//	   iceberg                        groups' share-partitions and configs; the records
//	                                  as SeaweedMQ stores them; the schema registry;
//	                                  topics kept as Iceberg tables
//	2  group, sasl, seaweedmq/wal,    the group coordinator (classic, consumer, streams
//	   seaweedmq/compaction, link     and share groups), the SASL logins, the write-ahead
//	                                  log, the log cleaner of compacted topics, topic
//	                                  links from other Kafka clusters
//	   seaweedmq (2.5)                SeaweedMQ as storage.Backend, knowing nothing of
//	                                  the handlers: the topic rules it shares with them
//	                                  are storage's
//	3  protocol, console              one file per Kafka API, over storage.Backend; the
//	                                  web console, a Kafka client of the gateways
//	4  gateway, cluster               the network server; leadership checks and the
//	                                  other gateways
//	   node                           a gateway put together: built, started, closed
//	5  weed/command                   the weed subcommands: flags into node.Config
//
// The test-only stand-ins (filerfs/filerfstest, membership/membershiptest,
// storage/storagetest) sit just above what they stand in for, and only
// tests import them; the tests and tools (e2e, docker,
// scripts/registrycompat) above everything.
package kafka
