// Package e2e holds the end-to-end tests: they build the weed binary, start
// a real single-node SeaweedFS (master, volume, filer, MQ broker) from it and
// a gateway on it, and drive the gateway with real Kafka clients.
package e2e
