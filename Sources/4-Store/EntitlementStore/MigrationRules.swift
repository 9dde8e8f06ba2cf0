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

    /// The directive `-- migrate: functions <name> …`: the migration carries these function files
    /// (``Migration/carriedFunctions``), run in its transaction right after its statements.
    public static let functionsDirective = "-- migrate: functions"

    /// From this version on, a migration may not define a function that has its own file: it names
    /// the file in its functions directive instead (versions 22–23 copied definitions before that).
    public static let firstFunctionFileVersion = 24

    /// The file's directives: its first lines that start with `-- migrate:`, trimmed.
    public static func directives(in sql: String) -> [String] {
        var directives: [String] = []
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            guard trimmed.hasPrefix("-- migrate:") else { break }
            directives.append(trimmed)
        }
        return directives
    }

    /// The function names a functions directive lists (separated by spaces or commas); none for any
    /// other directive.
    static func functionNames(_ directive: String) -> [String] {
        guard directive.hasPrefix(functionsDirective) else { return [] }
        let rest = directive.dropFirst(functionsDirective.count)
        guard rest.isEmpty || rest.first?.isWhitespace == true else { return [] }
        return rest.split { $0.isWhitespace || $0 == "," }.map(String.init)
    }

    /// Why the file's `-- migrate:` directives cannot be followed; empty when they can.
    public static func directiveProblems(in migration: Migration) -> [String] {
        let directives = directives(in: migration.sql)
        var problems: [String] = []
        let misplaced = migration.sql.split(separator: "\n").dropFirst(directives.count)
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { $0.hasPrefix("-- migrate:") }
        for line in misplaced {
            problems.append("'\(line)' is not among the file's first lines, where directives go (it would be ignored)")
        }
        for directive in directives where directive != noTransactionDirective {
            guard directive.hasPrefix(functionsDirective), directive == functionsDirective || !functionNames(directive).isEmpty else {
                problems.append("'\(directive)' is not a directive ('\(noTransactionDirective)', '\(functionsDirective) <name> …')")
                continue
            }
            let names = functionNames(directive)
            if names.isEmpty { problems.append("'\(directive)' names no function") }
            for name in names where !isFunctionName(name) {
                problems.append("'\(name)' in '\(directive)' is not a function file's name")
            }
        }
        for name in Set(migration.carriedFunctions) where migration.carriedFunctions.count(where: { $0 == name }) > 1 {
            problems.append("the functions directive names \(name) twice")
        }
        if !migration.transactional, !migration.carriedFunctions.isEmpty {
            problems.append(
                "'\(noTransactionDirective)' cannot carry functions: they run in the migration's own transaction, which it has none of (carry them in a transactional migration)"
            )
        }
        return problems
    }

    /// Statements of a migration from ``firstFunctionFileVersion`` on that define a function which
    /// has its own file, `functions/<name>.sql`: the file is carried by name instead of copied.
    public static func redefinitions(in migration: Migration, functionFiles: Set<String>) -> [String] {
        guard migration.version >= firstFunctionFileVersion else { return [] }
        return SQLStatements.split(migration.sql).map(SQLStatements.normalized).compactMap { statement in
            let prefixes = ["create or replace function ", "create function "]
            guard let prefix = prefixes.first(where: statement.hasPrefix) else { return nil }
            let name = tableName(String(statement.dropFirst(prefix.count).prefix { $0 != " " }))
            guard functionFiles.contains(name) else { return nil }
            return
                "'\(statement.prefix(80))' redefines \(name), which functions/\(name).sql defines: name it in '\(functionsDirective) \(name)' instead of copying it"
        }
    }

    private static func isFunctionName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || ("a"..."z").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ("a"..."z").contains($0) || ("0"..."9").contains($0) }
    }

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
