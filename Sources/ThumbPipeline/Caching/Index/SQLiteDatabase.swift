internal import CSQLite

/// A failed SQLite call: what was attempted, sqlite's result code and its message.
struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    var operation: String
    /// The (extended) result code, e.g. SQLITE_FULL = 13, SQLITE_CORRUPT = 11, SQLITE_NOTADB = 26.
    var code: Int32
    var message: String

    var description: String { "\(operation): \(message) (sqlite \(code))" }

    /// The database file is damaged or is not a database at all.
    var isCorruption: Bool {
        let primary = code & 0xff
        return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB
    }

    /// The disk (or a quota) is full.
    var isDiskFull: Bool { code & 0xff == SQLITE_FULL }
}

/// A value bound to a statement parameter.
enum SQLiteValue: Sendable, Equatable {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
    case null
}

/// The current row of a stepping statement; valid only inside the row callback.
struct SQLiteRow {
    fileprivate let statement: OpaquePointer

    func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(statement, column)) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(statement, column) }
    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(statement, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }
    func blob(_ column: Int32) -> [UInt8] {
        guard let pointer = sqlite3_column_blob(statement, column) else { return [] }
        let count = Int(sqlite3_column_bytes(statement, column))
        return [UInt8](UnsafeRawBufferPointer(start: pointer, count: count))
    }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
}

/// The only place that talks to the SQLite C API: one connection, its prepared statements
/// (cached by SQL text), and errors that carry sqlite's own message.
///
/// Not thread-safe: its owner serializes access (the connection is opened NOMUTEX).
final class SQLiteDatabase {
    let path: String
    private var handle: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    /// SQLite's own counters summed over every statement run through `query`: virtual-machine
    /// steps (∝ rows visited) and steps of full table scans. For tests that a query visits only
    /// its own rows.
    private(set) var virtualMachineSteps = 0
    private(set) var fullScanSteps = 0

    /// Opens (creating if needed) the database at `path`.
    init(path: String) throws(SQLiteError) {
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let result = sqlite3_open_v2(path, &db, flags, nil)
        guard result == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(result))
            sqlite3_close_v2(db)
            throw SQLiteError(operation: "open \(path)", code: result, message: message)
        }
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 5_000)
        handle = db
    }

    deinit { close() }

    var isOpen: Bool { handle != nil }

    /// Finalizes every statement and closes the connection (idempotent).
    func close() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Runs one or more statements without parameters or results (schema, pragmas, BEGIN/COMMIT).
    func exec(_ sql: String) throws(SQLiteError) {
        let db = try connection(for: sql)
        var errorMessage: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(db, sql, nil, nil, &errorMessage)
        if result != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(db))
            sqlite3_free(errorMessage)
            throw SQLiteError(operation: sql, code: result, message: message)
        }
    }

    /// Runs a statement to completion; returns the number of rows it changed.
    @discardableResult
    func execute(_ sql: String, _ values: [SQLiteValue] = []) throws(SQLiteError) -> Int {
        try query(sql, values) { _ in }
        return Int(sqlite3_changes(handle))
    }

    /// Runs a statement, calling `row` for each result row.
    func query(_ sql: String, _ values: [SQLiteValue] = [], _ row: (SQLiteRow) -> Void) throws(SQLiteError) {
        let db = try connection(for: sql)
        let statement = try prepared(sql, db)
        defer {
            virtualMachineSteps &+= Int(sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_VM_STEP, 1))
            fullScanSteps &+= Int(sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_FULLSCAN_STEP, 1))
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let result: Int32 = switch value {
            case .integer(let number): sqlite3_bind_int64(statement, index, number)
            case .real(let number): sqlite3_bind_double(statement, index, number)
            case .null: sqlite3_bind_null(statement, index)
            case .text(let text):
                text.utf8CString.withUnsafeBufferPointer { buffer in
                    sqlite3_bind_text(statement, index, buffer.baseAddress, Int32(buffer.count - 1), sqliteTransient)
                }
            case .blob(let bytes):
                bytes.withUnsafeBytes { buffer in
                    sqlite3_bind_blob(statement, index, buffer.baseAddress, Int32(buffer.count), sqliteTransient)
                }
            }
            guard result == SQLITE_OK else { throw error("bind \(sql)", result, db) }
        }
        while true {
            let result = sqlite3_step(statement)
            if result == SQLITE_ROW {
                row(SQLiteRow(statement: statement))
            } else if result == SQLITE_DONE {
                return
            } else {
                throw error(sql, result, db)
            }
        }
    }

    /// The first column of the first row as an integer, or nil without rows (or for NULL).
    func scalar(_ sql: String, _ values: [SQLiteValue] = []) throws(SQLiteError) -> Int64? {
        var value: Int64?
        var seen = false
        try query(sql, values) { row in
            if !seen, !row.isNull(0) { value = row.integer(0) }
            seen = true
        }
        return value
    }

    /// Runs `body` inside BEGIN IMMEDIATE … COMMIT, rolling back when it throws.
    func transaction<Result>(_ body: () throws(SQLiteError) -> Result) throws(SQLiteError) -> Result {
        try exec("BEGIN IMMEDIATE")
        do throws(SQLiteError) {
            let result = try body()
            try exec("COMMIT")
            return result
        } catch {
            try? exec("ROLLBACK")
            throw error
        }
    }

    // MARK: - Private

    private func connection(for sql: String) throws(SQLiteError) -> OpaquePointer {
        guard let handle else { throw SQLiteError(operation: sql, code: SQLITE_MISUSE, message: "database is closed") }
        return handle
    }

    private func prepared(_ sql: String, _ db: OpaquePointer) throws(SQLiteError) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        guard result == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw error("prepare \(sql)", result, db)
        }
        statements[sql] = statement
        return statement
    }

    private func error(_ operation: String, _ code: Int32, _ db: OpaquePointer) -> SQLiteError {
        SQLiteError(operation: operation, code: code, message: String(cString: sqlite3_errmsg(db)))
    }
}

/// SQLITE_TRANSIENT: sqlite copies bound text before the call returns.
private let sqliteTransient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
