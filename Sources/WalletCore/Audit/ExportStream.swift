/// An export as an async sequence of text chunks: the header and checkpoint first, then one
/// chunk per page of transactions. While the consumer writes one chunk, the next page is read
/// (reading and encoding then use both cores), and no further: a slow reader holds back the
/// database reads instead of filling memory.
public struct ExportStream: AsyncSequence, Sendable {
    public typealias Element = ExportChunk

    package let format: ExportFormat
    package let checkpoint: ExportCheckpoint
    package let seqs: Range<Int64>
    package let pageSize: Int
    /// Reads the transactions of a seq range that the export keeps, in seq order.
    package let fetchPage: @Sendable (ClosedRange<Int64>) async throws(WalletError) -> [LedgerTransaction]

    public func makeAsyncIterator() -> Iterator {
        Iterator(stream: self, next: seqs.lowerBound)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let stream: ExportStream
        var next: Int64
        var startedWriting = false
        /// The page being read while the previous one is encoded and written.
        var reading: Task<[LedgerTransaction], any Error>?

        public mutating func next() async throws -> ExportChunk? {
            let encoder = ExportEncoder(format: stream.format)
            if !startedWriting {
                startedWriting = true
                reading = readNextPage()
                let text = (encoder.header() ?? "") + encoder.checkpoint(stream.checkpoint)
                return ExportChunk(bytes: Array(text.utf8), transactions: 0, postings: 0, lastHash: nil)
            }
            while let page = try await reading?.value {
                reading = readNextPage()
                guard let last = page.last else { continue }
                let postings = page.reduce(0) { $0 + $1.postings.count }
                var bytes: [UInt8] = []
                bytes.reserveCapacity(postings * 480)
                for transaction in page { encoder.append(transaction, to: &bytes) }
                return ExportChunk(bytes: bytes, transactions: Int64(page.count), postings: Int64(postings), lastHash: last.hash)
            }
            return nil
        }

        /// Starts reading the next page of seqs; nil once all were read.
        private mutating func readNextPage() -> Task<[LedgerTransaction], any Error>? {
            guard next < stream.seqs.upperBound else { return nil }
            let pageSeqs = next...Swift.min(stream.seqs.upperBound - 1, next + Int64(stream.pageSize) - 1)
            next = pageSeqs.upperBound + 1
            let fetchPage = stream.fetchPage
            return Task { try await fetchPage(pageSeqs) }
        }
    }

    package init(format: ExportFormat, checkpoint: ExportCheckpoint, seqs: Range<Int64>, pageSize: Int, fetchPage: @escaping @Sendable (ClosedRange<Int64>) async throws(WalletError) -> [LedgerTransaction]) {
        self.format = format
        self.checkpoint = checkpoint
        self.seqs = seqs
        self.pageSize = pageSize
        self.fetchPage = fetchPage
    }
}

/// A piece of an export: its UTF-8 text, and what it holds.
public struct ExportChunk: Sendable {
    public var bytes: [UInt8]
    public var transactions: Int64
    public var postings: Int64
    /// The hash of the chunk's last transaction; nil for the header chunk.
    public var lastHash: String?
}

extension ExportStream {
    /// The hash the export continues from.
    public var checkpointHash: String { checkpoint.hash }

    /// Writes the whole stream through `write`, reporting postings written to `progress`.
    public func write(progress: ((Int64) -> Void)? = nil, to write: ([UInt8]) throws -> Void) async throws -> ExportSummary {
        var summary = ExportSummary(transactions: 0, postings: 0, lastHash: checkpoint.hash)
        for try await chunk in self {
            try write(chunk.bytes)
            summary.transactions += chunk.transactions
            summary.postings += chunk.postings
            if let lastHash = chunk.lastHash { summary.lastHash = lastHash }
            if chunk.postings > 0 { progress?(summary.postings) }
        }
        return summary
    }
}
