import EnvironmentSettings
import Foundation
import KafkaClient
import PipelineRecords
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
        #expect(config.producer.compression == .lz4)
        let json = try StageConfiguration(
            stage: "verify", defaults: defaults,
            environment: EnvironmentReader([
                "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "LOG_FORMAT": "JSON", "KAFKA_COMPRESSION": "ZSTD",
            ]))
        #expect(json.logFormat == .json)
        #expect(json.producer.compression == .zstd)
        #expect(StageConfiguration.variables(stage: "verify", defaults: defaults).contains { $0.name == "LOG_FORMAT" })
    }

    @Test(
        "a pass-through that would weaken delivery guarantees is refused, naming its variable",
        arguments: [
            ("KAFKA_PROP_ACKS", "1"), ("KAFKA_PROP_ENABLE_IDEMPOTENCE", "false"), ("KAFKA_PROP_ENABLE_AUTO_COMMIT", "true"),
            ("KAFKA_PROP_ENABLE_AUTO_OFFSET_STORE", "true"), ("KAFKA_PROP_REQUEST_REQUIRED_ACKS", "0"),
        ])
    func guaranteesCannotBeOverridden(variable: String, value: String) throws {
        let env = EnvironmentReader(["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", variable: value])
        #expect {
            try StageConfiguration(stage: "grant", defaults: defaults, environment: env)
        } throws: { error in
            (error as? ConfigurationError)?.variable == variable && "\(error)".contains("delivery guarantees")
        }
    }

    @Test("a properties file may not set them either")
    func guaranteesCannotBeOverriddenFromTheFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("kafka-\(UUID().uuidString).properties").path
        try "sasl.password = secret\nacks=1\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let env = EnvironmentReader(["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "KAFKA_PROPERTIES_FILE": path])
        #expect {
            try StageConfiguration(stage: "grant", defaults: defaults, environment: env)
        } throws: { error in
            (error as? ConfigurationError)?.variable == "KAFKA_PROPERTIES_FILE" && "\(error)".contains("acks")
        }
    }

    @Test("--help lists every declared variable once, with the default the stage reads")
    func helpListsEveryVariableWithItsDefault() throws {
        let enrich = StageConfiguration.Defaults(stage: PipelineStages.enrich, httpPort: 8082, batchSize: 50)
        let variables = StageConfiguration.variables(stage: "enrich", defaults: enrich)
        let usage = ProcessBootstrap.usage(name: "enrich", summary: "enriches", variables: variables)
        let lines = usage.split(separator: "\n").map(String.init)
        #expect(Set(variables.map(\.name)).count == variables.count)
        for variable in variables {
            let line = lines.first { $0.hasPrefix("  \(variable.name) ") }
            #expect(line != nil, "\(variable.name) is missing from --help")
            if !variable.defaultText.isEmpty {
                #expect(line?.hasSuffix("[default: \(variable.defaultText)]") == true, "\(variable.name): \(line ?? "")")
            }
        }
        // What --help shows is what an empty environment gives: both come from one declaration.
        let config = try StageConfiguration(
            stage: "enrich", defaults: enrich, environment: EnvironmentReader(["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092"]))
        let shown = Dictionary(uniqueKeysWithValues: variables.map { ($0.name, $0.defaultText) })
        #expect(shown["INPUT_TOPIC"] == PipelineStages.enrich.inputTopic && config.inputTopic == PipelineStages.enrich.inputTopic)
        #expect(shown["DLQ_TOPIC"] == config.deadLetterTopic && shown["KAFKA_GROUP_ID"] == config.groupID)
        #expect(shown["HTTP_PORT"] == "\(config.httpPort)" && config.httpPort == 8082)
        #expect(shown["BATCH_SIZE"] == "\(config.runner.maxBatchSize)" && config.runner.maxBatchSize == 50)
        #expect(shown["KAFKA_SESSION_TIMEOUT_MS"] == "10000" && config.consumer.sessionTimeout == .seconds(10))
        #expect(shown["KAFKA_CLIENT_ID"] == config.kafka.clientID)
        #expect(shown["LOG_LEVEL"] == "info" && "\(config.logLevel)" == "info")
    }

    @Test("librdkafka pass-through values are secret: never in --help, marked as secret")
    func kafkaPropertiesAreSecret() throws {
        let password = "pass-through-secret-\(Int.random(in: 1000...9999))"
        let env = EnvironmentReader(["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "KAFKA_PROP_SASL_PASSWORD": password])
        let config = try StageConfiguration(stage: "verify", defaults: defaults, environment: env)
        #expect(config.kafka.properties["sasl.password"] == password)
        let variables = StageConfiguration.variables(stage: "verify", defaults: defaults)
        #expect(variables.first { $0.name == "KAFKA_PROP_<NAME>" }?.isSecret == true)
        let usage = ProcessBootstrap.usage(name: "verify", summary: "verifies", variables: variables)
        #expect(!usage.contains(password))
        #expect(usage.contains("KAFKA_PROP_<NAME>") && usage.contains("(secret)"))
    }

    @Test("values are trimmed and a blank one counts as unset, as before the library")
    func blankIsUnset() throws {
        let config = try StageConfiguration(
            stage: "verify", defaults: defaults,
            environment: EnvironmentReader(["KAFKA_BOOTSTRAP_SERVERS": " 127.0.0.1:9092 ", "HTTP_PORT": "", "BATCH_SIZE": " 7 "]))
        #expect(config.kafka.bootstrapServers == "127.0.0.1:9092")
        #expect(config.httpPort == 8081)
        #expect(config.runner.maxBatchSize == 7)
        #expect(throws: ConfigurationError.self) {
            _ = try StageConfiguration(stage: "verify", defaults: defaults, environment: EnvironmentReader(["KAFKA_BOOTSTRAP_SERVERS": "  "]))
        }
    }

    @Test(
        "a missing or bad value names its variable",
        arguments: [
            ([:], "KAFKA_BOOTSTRAP_SERVERS is required"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "HTTP_PORT": "http"], "HTTP_PORT must be a whole number"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "KAFKA_ASSIGNOR": "sticky"], "KAFKA_ASSIGNOR must be one of"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "LOG_LEVEL": "loud"], "LOG_LEVEL must be one of"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "LOG_FORMAT": "yaml"], "LOG_FORMAT must be one of text, json"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "KAFKA_PROPERTIES_FILE": "/nonexistent"], "KAFKA_PROPERTIES_FILE names a file"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "HTTP_PORT": "70000"], "HTTP_PORT must be a whole number from 0 to 65535 (got \"70000\")"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "KAFKA_LINGER_MS": "1.5"], "KAFKA_LINGER_MS must be a whole number from 0 to 10000"),
            (["KAFKA_BOOTSTRAP_SERVERS": "x:1", "KAFKA_COMPRESSION": "brotli"], "KAFKA_COMPRESSION must be one of none, gzip"),
        ])
    func invalid(environment: [String: String], expected: String) {
        #expect {
            _ = try StageConfiguration(stage: "verify", defaults: defaults, environment: EnvironmentReader(environment))
        } throws: { error in
            "\(error)".hasPrefix("configuration error: \(expected)")
        }
    }

    @Test("TASKS_ON_EVENT_LOOPS is on unless set off, and a bad value names the variable")
    func tasksOnEventLoopsSetting() throws {
        #expect(try EnvironmentReader([:]).read(CommonSettings.tasksOnEventLoops))
        #expect(try !EnvironmentReader(["TASKS_ON_EVENT_LOOPS": "off"]).read(CommonSettings.tasksOnEventLoops))
        #expect {
            _ = try EnvironmentReader(["TASKS_ON_EVENT_LOOPS": "maybe"]).read(CommonSettings.tasksOnEventLoops)
        } throws: { error in
            "\(error)".hasPrefix("configuration error: TASKS_ON_EVENT_LOOPS must be true or false")
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
