/// An export as an async sequence of text chunks: the header and checkpoint first, then one
/// chunk per page of transactions. Each page is fetched only when the consumer asks for it,
/// so a slow reader holds back the database reads instead of filling memory.
public struct ExportStream: AsyncSequence, Sendable {
    public typealias Element = ExportChunk

    let format: ExportFormat
    let checkpoint: ExportCheckpoint
    let seqs: Range<Int64>
    let pageSize: Int
    /// Reads the transactions of a seq range that the export keeps, in seq order.
    let fetchPage: @Sendable (ClosedRange<Int64>) async throws(WalletError) -> [LedgerTransaction]

    public func makeAsyncIterator() -> Iterator {
        Iterator(stream: self, next: seqs.lowerBound)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let stream: ExportStream
        var next: Int64
        var startedWriting = false

        public mutating func next() async throws -> ExportChunk? {
            let encoder = ExportEncoder(format: stream.format)
            if !startedWriting {
                startedWriting = true
                return ExportChunk(text: (encoder.header() ?? "") + encoder.checkpoint(stream.checkpoint), transactions: 0, postings: 0, lastHash: nil)
            }
            while next < stream.seqs.upperBound {
                let pageSeqs = next...Swift.min(stream.seqs.upperBound - 1, next + Int64(stream.pageSize) - 1)
                next = pageSeqs.upperBound + 1
                let page = try await stream.fetchPage(pageSeqs)
                guard let last = page.last else { continue }
                return ExportChunk(
                    text: page.map(encoder.transaction).joined(), transactions: Int64(page.count),
                    postings: Int64(page.reduce(0) { $0 + $1.postings.count }), lastHash: last.hash)
            }
            return nil
        }
    }
}

/// A piece of an export: its text, and what it holds.
public struct ExportChunk: Sendable {
    public var text: String
    public var transactions: Int64
    public var postings: Int64
    /// The hash of the chunk's last transaction; nil for the header chunk.
    public var lastHash: String?
}

extension ExportStream {
    /// The hash the export continues from.
    public var checkpointHash: String { checkpoint.hash }

    /// Writes the whole stream through `write`, reporting postings written to `progress`.
    public func write(progress: ((Int64) -> Void)? = nil, to write: (String) throws -> Void) async throws -> ExportSummary {
        var summary = ExportSummary(transactions: 0, postings: 0, lastHash: checkpoint.hash)
        for try await chunk in self {
            try write(chunk.text)
            summary.transactions += chunk.transactions
            summary.postings += chunk.postings
            if let lastHash = chunk.lastHash { summary.lastHash = lastHash }
            if chunk.postings > 0 { progress?(summary.postings) }
        }
        return summary
    }
}
