import EnvironmentSettings
import KafkaClient
import StageRuntime
import Testing

@Suite("Stage configuration from the environment")
struct ConfigurationTests {
    let defaults = StageConfiguration.Defaults(inputTopic: "in", outputTopic: "out", deadLetterTopic: "dlq", httpPort: 8081)

    @Test("defaults apply and librdkafka properties pass through")
    func defaultsAndPassThrough() throws {
        let config = try StageConfiguration(
            stage: "verify", defaults: defaults,
            environment: EnvironmentReader([
                "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092",
                "KAFKA_PROP_SECURITY_PROTOCOL": "SASL_SSL",
                "KAFKA_PROP_SASL_MECHANISMS": "PLAIN",
                "BATCH_SIZE": "32",
            ]))
        #expect(config.groupID == "appstore.verify")
        #expect(config.inputTopic == "in" && config.deadLetterTopic == "dlq")
        #expect(config.httpPort == 8081)
        #expect(config.kafka.properties == ["security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN"])
        #expect(config.runner.maxBatchSize == 32)
        #expect(config.consumer.assignor == .cooperativeSticky)
        #expect(config.logFormat == .text)
        let json = try StageConfiguration(
            stage: "verify", defaults: defaults,
            environment: EnvironmentReader([
                "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "LOG_FORMAT": "JSON",
            ]))
        #expect(json.logFormat == .json)
        #expect(StageConfiguration.variables.contains { $0.name == "LOG_FORMAT" })
    }

    @Test(
        "a missing or bad value names its variable",
        arguments: [
            ([:], "KAFKA_BOOTSTRAP_SERVERS is required"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "HTTP_PORT": "http"], "HTTP_PORT must be a whole number"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "KAFKA_ASSIGNOR": "sticky"], "KAFKA_ASSIGNOR must be one of"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "LOG_LEVEL": "loud"], "LOG_LEVEL must be one of"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "LOG_FORMAT": "yaml"], "LOG_FORMAT must be text or json"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "KAFKA_PROPERTIES_FILE": "/nonexistent"], "KAFKA_PROPERTIES_FILE names a file"),
        ])
    func invalid(environment: [String: String], expected: String) {
        #expect {
            _ = try StageConfiguration(stage: "verify", defaults: defaults, environment: EnvironmentReader(environment))
        } throws: { error in
            "\(error)".hasPrefix("configuration error: \(expected)")
        }
    }

    @Test("retry delays grow, are capped, and honour a longer retry-after")
    func retryPolicy() {
        let policy = RetryPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(2))
        for attempt in 1...10 {
            let d = policy.delay(afterAttempt: attempt)
            #expect(d <= .seconds(2))
            #expect(d >= .milliseconds(min(2000, 100 << (attempt - 1)) / 2))
        }
        #expect(policy.delay(afterAttempt: 1, retryAfter: .milliseconds(1500)) == .milliseconds(1500))
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(60)) == .seconds(2))
    }
}
