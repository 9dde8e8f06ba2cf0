import Foundation

/// What makes a migration safe to run on a big database that grant is writing to (docs/migrations.md):
/// an index on a table that already exists is built `CONCURRENTLY` (a plain `CREATE INDEX` blocks
/// every write to the table for the whole build), a concurrent build runs outside a transaction,
/// which the file asks for with the directive `-- migrate: no-transaction` on its first line, and a
/// PL/pgSQL function pins its `search_path`.
public enum MigrationRules {
    /// The first version the rules apply to. Migrations 1–20 were written before them and are
    /// applied everywhere already; changing their files would stop every start (checksums).
    public static let firstCheckedVersion = 21

    /// The first-line directive that makes a migration run statement by statement, outside a
    /// transaction.
    public static let noTransactionDirective = "-- migrate: no-transaction"

    /// Why `migration` is unsafe to run on a live database; empty when it is safe.
    public static func problems(in migration: Migration) -> [String] {
        guard migration.version >= firstCheckedVersion else { return [] }
        let statements = SQLStatements.split(migration.sql).map(SQLStatements.normalized)
        let created = Set(statements.compactMap(createdTable))
        var problems: [String] = []
        for statement in statements {
            if definesFunctionWithoutPinnedPath(statement) {
                problems.append(
                    "'\(statement.prefix(80))' defines a PL/pgSQL function without SET search_path = public, pg_temp (a caller's search_path could shadow its tables)"
                )
            }
            guard let build = indexBuild(statement) else {
                if statement.hasPrefix("drop index concurrently") || statement.hasPrefix("reindex") && statement.contains(" concurrently "),
                    migration.transactional
                {
                    problems.append("'\(statement.prefix(80))' cannot run in a transaction: start the file with '\(noTransactionDirective)'")
                }
                continue
            }
            if build.concurrently {
                if migration.transactional {
                    problems.append(
                        "'\(statement.prefix(80))' cannot run in a transaction: start the file with '\(noTransactionDirective)'")
                }
            } else if !created.contains(build.table) {
                problems.append(
                    "'\(statement.prefix(80))' blocks every write to \(build.table) while it builds: use CREATE INDEX CONCURRENTLY IF NOT EXISTS in a '\(noTransactionDirective)' migration"
                )
            }
        }
        return problems
    }

    /// A `CREATE [OR REPLACE] FUNCTION` in PL/pgSQL that does not pin its `search_path` (replacing
    /// a function drops the pin an earlier migration set).
    static func definesFunctionWithoutPinnedPath(_ statement: String) -> Bool {
        guard statement.hasPrefix("create function") || statement.hasPrefix("create or replace function") else { return false }
        return statement.contains("language plpgsql") && !statement.contains("set search_path")
    }

    /// The table a `CREATE TABLE` statement creates.
    static func createdTable(_ statement: String) -> String? {
        var words = statement.split(separator: " ").map(String.init)
        guard words.count >= 3, words[0] == "create" else { return nil }
        words.removeFirst()
        while let first = words.first, ["unlogged", "temporary", "temp"].contains(first) { words.removeFirst() }
        guard words.first == "table" else { return nil }
        words.removeFirst()
        if words.starts(with: ["if", "not", "exists"]) { words.removeFirst(3) }
        return words.first.map(tableName)
    }

    /// The table a `CREATE [UNIQUE] INDEX` statement builds on, and whether it builds concurrently.
    static func indexBuild(_ statement: String) -> (table: String, concurrently: Bool)? {
        let words = statement.split(separator: " ").map(String.init)
        guard words.first == "create" else { return nil }
        let kind = words.dropFirst().first == "unique" ? 2 : 1
        guard words.count > kind, words[kind] == "index" else { return nil }
        guard let on = words.firstIndex(of: "on"), on + 1 < words.count else { return nil }
        var target = on + 1
        if words[target] == "only", target + 1 < words.count { target += 1 }
        return (tableName(words[target]), words[kind + 1] == "concurrently")
    }

    /// `public."Transactions"(…` → `transactions`: the bare name, unquoted, without schema or column list.
    static func tableName(_ word: String) -> String {
        let bare = word.prefix { $0 != "(" }
        return String(bare.split(separator: ".").last ?? bare[...]).replacingOccurrences(of: "\"", with: "")
    }
}

/// Splits a migration file into its statements: at each `;` outside quotes, dollar quotes and
/// comments. Needed where statements must run one by one (outside a transaction).
public enum SQLStatements {
    public static func split(_ sql: String) -> [String] {
        let chars = Array(sql.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var i = 0
        func flush() {
            let text = String(current).trimmingWhitespace
            if !text.isEmpty, !text.allLinesAreComments { statements.append(text) }
            current = String.UnicodeScalarView()
        }
        while i < chars.count {
            let c = chars[i]
            let next = i + 1 < chars.count ? chars[i + 1] : nil
            if c == "-", next == "-" {
                while i < chars.count, chars[i] != "\n" {
                    current.append(chars[i])
                    i += 1
                }
                continue
            }
            if c == "/", next == "*" {
                var depth = 0
                repeat {
                    if chars[i] == "/", i + 1 < chars.count, chars[i + 1] == "*" {
                        depth += 1
                        current.append(contentsOf: [chars[i], chars[i + 1]])
                        i += 2
                    } else if chars[i] == "*", i + 1 < chars.count, chars[i + 1] == "/" {
                        depth -= 1
                        current.append(contentsOf: [chars[i], chars[i + 1]])
                        i += 2
                    } else {
                        current.append(chars[i])
                        i += 1
                    }
                } while depth > 0 && i < chars.count
                continue
            }
            if c == "'" || c == "\"" {
                current.append(c)
                i += 1
                while i < chars.count {
                    current.append(chars[i])
                    if chars[i] == c {
                        // A doubled quote is an escaped one.
                        if i + 1 < chars.count, chars[i + 1] == c {
                            current.append(chars[i + 1])
                            i += 2
                            continue
                        }
                        i += 1
                        break
                    }
                    i += 1
                }
                continue
            }
            if c == "$", let tag = dollarTag(chars, at: i) {
                current.append(contentsOf: tag)
                i += tag.count
                while i < chars.count {
                    if chars[i] == "$", chars[i...].starts(with: tag) {
                        current.append(contentsOf: tag)
                        i += tag.count
                        break
                    }
                    current.append(chars[i])
                    i += 1
                }
                continue
            }
            if c == ";" {
                flush()
                i += 1
                continue
            }
            current.append(c)
            i += 1
        }
        flush()
        return statements
    }

    /// `$tag$` or `$$` starting at `i`, if one does.
    private static func dollarTag(_ chars: [Unicode.Scalar], at i: Int) -> [Unicode.Scalar]? {
        var j = i + 1
        while j < chars.count, chars[j] == "_" || chars[j].properties.isAlphabetic || (j > i + 1 && chars[j].properties.numericType != nil) {
            j += 1
        }
        guard j < chars.count, chars[j] == "$" else { return nil }
        return Array(chars[i...j])
    }

    /// A statement without comments, lowercased, with whitespace collapsed: for matching its shape.
    public static func normalized(_ statement: String) -> String {
        var text = statement
        while let open = text.range(of: "/*") {
            let close = text.range(of: "*/", range: open.upperBound..<text.endIndex)?.upperBound ?? text.endIndex
            text.replaceSubrange(open.lowerBound..<close, with: " ")
        }
        return text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in line.range(of: "--").map { String(line[..<$0.lowerBound]) } ?? String(line) }
            .joined(separator: " ")
            .lowercased()
            .split(whereSeparator: \.isWhitespace)
            .joined(separator: " ")
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }

    fileprivate var allLinesAreComments: Bool {
        split(separator: "\n").allSatisfy { $0.drop { $0.isWhitespace }.hasPrefix("--") || $0.allSatisfy(\.isWhitespace) }
    }
}
