package io.seaweedfs.kafka.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnsupportedByAuthenticationException;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;

/**
 * The AdminClient for users and ACLs, and clients logging in with what it
 * set: SCRAM credentials made, described and deleted; ACLs created,
 * described, obeyed and deleted. The administrator is the suite's
 * PLAINTEXT client (a super user); the user logs in on the gateway's
 * SASL_PLAINTEXT listener (-Dkafka.sasl.bootstrap).
 */
class SecurityTest {

    static String saslBootstrap() {
        return System.getProperty("kafka.sasl.bootstrap", "127.0.0.1:9093");
    }

    static Properties as(Properties p, String user, String password) {
        return login(p, user, password, "");
    }

    /** p logging in with SCRAM-SHA-256, with a delegation token when extra is tokenauth="true". */
    static Properties login(Properties p, String user, String password, String extra) {
        p.put("bootstrap.servers", saslBootstrap());
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "SCRAM-SHA-256");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
            + user + "\" password=\"" + password + "\" " + extra + ";");
        return p;
    }

    /** Sends one record as the user; the exception, or null. */
    static Throwable sendAs(String user, String password, String topic) {
        return send(as(Gateway.producer(), user, password), user, topic);
    }

    /** Sends one record with the token (tokenauth); the exception, or null. */
    static Throwable sendWithToken(DelegationToken token, String topic) {
        return send(login(Gateway.producer(), token.tokenInfo().tokenId(), token.hmacAsBase64String(), "tokenauth=\"true\""),
            "token", topic);
    }

    static Throwable send(Properties p, String user, String topic) {
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 10_000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.send(new ProducerRecord<>(topic, "k", "from " + user)).get(30, TimeUnit.SECONDS);
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (Exception e) {
            return e;
        }
    }

    @Test
    void scramCredentialsAndAcls() throws Exception {
        String user = Gateway.unique("java-user");
        String topic = Gateway.topic("secured", 1);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Gateway.producer())) {
            producer.send(new ProducerRecord<>(topic, "k", "from the administrator")).get(30, TimeUnit.SECONDS);
        }
        try (Admin admin = Gateway.admin()) {
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "s3cret"))).all().get(30, TimeUnit.SECONDS);
            UserScramCredentialsDescription d = admin.describeUserScramCredentials(List.of(user)).description(user).get(30, TimeUnit.SECONDS);
            assertEquals(List.of(new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)), d.credentialInfos(), "the user's credentials");

            // No ACL on the topic: open (allow.everyone.if.no.acl.found).
            assertEquals(null, sendAs(user, "s3cret", topic), "a write before any ACL");
            assertInstanceOf(SaslAuthenticationException.class, sendAs(user, "wrong", topic), "a wrong password");

            // Read allowed: the user reads, and may no longer write.
            AclBinding read = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                new AccessControlEntry("User:" + user, "*", AclOperation.READ, AclPermissionType.ALLOW));
            admin.createAcls(List.of(read)).all().get(30, TimeUnit.SECONDS);
            AclBindingFilter onTopic = new AclBindingFilter(new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.LITERAL),
                AccessControlEntryFilter.ANY);
            Collection<AclBinding> described = admin.describeAcls(onTopic).values().get(30, TimeUnit.SECONDS);
            assertEquals(List.of(read), new ArrayList<>(described), "the topic's ACLs");

            List<String> got = new ArrayList<>();
            Properties c = as(Gateway.consumer(null), user, "s3cret");
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
                TopicPartition tp = new TopicPartition(topic, 0);
                consumer.assign(List.of(tp));
                consumer.seekToBeginning(List.of(tp));
                long deadline = System.currentTimeMillis() + Gateway.DEADLINE_MS;
                while (got.size() < 2 && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Gateway.POLL)) {
                        got.add(r.value());
                    }
                }
            }
            assertEquals(List.of("from the administrator", "from " + user), got, "read by the user");
            assertInstanceOf(TopicAuthorizationException.class, sendAs(user, "s3cret", topic), "a write with only Read allowed");

            // The ACL deleted: open again.
            Collection<AclBinding> deleted = admin.deleteAcls(List.of(onTopic)).all().get(30, TimeUnit.SECONDS);
            assertEquals(List.of(read), new ArrayList<>(deleted), "the ACLs deleted");
            assertTrue(admin.describeAcls(onTopic).values().get(30, TimeUnit.SECONDS).isEmpty(), "no ACL left");
            assertEquals(null, sendAs(user, "s3cret", topic), "a write after the ACL is gone");

            // The credential deleted: the login fails.
            admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)))
                .all().get(30, TimeUnit.SECONDS);
            assertTrue(admin.describeUserScramCredentials().all().get(30, TimeUnit.SECONDS).keySet().stream().noneMatch(user::equals),
                "the user's credentials are gone");
            assertInstanceOf(SaslAuthenticationException.class, sendAs(user, "s3cret", topic), "a login after the deletion");
        }
    }

    /**
     * Delegation tokens: a user logged in with SCRAM asks for one; a producer logs in with it
     * (ScramLoginModule, tokenauth="true") as that user and writes where only that user may; the
     * user describes, renews and expires it; expired, it no longer logs in. The PLAINTEXT
     * administrator may not ask for tokens.
     */
    @Test
    void delegationTokens() throws Exception {
        String user = Gateway.unique("java-token-owner");
        String topic = Gateway.topic("by-token", 1);
        try (Admin admin = Gateway.admin()) {
            ExecutionException plain = assertThrows(ExecutionException.class,
                () -> admin.createDelegationToken().delegationToken().get(30, TimeUnit.SECONDS));
            assertInstanceOf(UnsupportedByAuthenticationException.class, plain.getCause(), "a token asked for on PLAINTEXT");
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), "owner-secret"))).all().get(30, TimeUnit.SECONDS);
            admin.createAcls(List.of(new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                new AccessControlEntry("User:" + user, "*", AclOperation.WRITE, AclPermissionType.ALLOW)))).all().get(30, TimeUnit.SECONDS);
        }
        Properties ap = as(new Properties(), user, "owner-secret");
        try (Admin owner = Admin.create(ap)) {
            KafkaPrincipal bob = new KafkaPrincipal("User", "bob");
            DelegationToken token = owner.createDelegationToken(new CreateDelegationTokenOptions().renewers(List.of(bob)))
                .delegationToken().get(30, TimeUnit.SECONDS);
            assertEquals(new KafkaPrincipal("User", user), token.tokenInfo().owner(), "the token's owner");
            assertEquals(List.of(bob), new ArrayList<>(token.tokenInfo().renewers()), "the token's renewers");

            assertEquals(null, sendWithToken(token, topic), "a write with the token, where only its owner may write");

            List<DelegationToken> described = owner.describeDelegationToken().delegationTokens().get(30, TimeUnit.SECONDS);
            assertTrue(described.stream().anyMatch(d -> d.tokenInfo().tokenId().equals(token.tokenInfo().tokenId())
                && d.hmacAsBase64String().equals(token.hmacAsBase64String())), "the token described: " + described);

            long renewed = owner.renewDelegationToken(token.hmac()).expiryTimestamp().get(30, TimeUnit.SECONDS);
            assertTrue(renewed >= token.tokenInfo().expiryTimestamp(), "renewed to " + renewed);

            owner.expireDelegationToken(token.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1))
                .expiryTimestamp().get(30, TimeUnit.SECONDS);
            assertInstanceOf(SaslAuthenticationException.class, sendWithToken(token, topic), "a login with the expired token");
        }
    }
}
