// Package message is ledgermq's message model and the byte codecs of
// RocketMQ's stored-message format: the properties text, the commitlog
// record (which is also the element of a PULL_MESSAGE body and of the
// CHECK_TRANSACTION_STATE, VIEW_MESSAGE_BY_ID and QUERY_MESSAGE bodies),
// offset message ids, client message ids (UNIQ_KEY) and Java's string hash.
//
// It is pure code over byte slices: no I/O, no clock except the one handed
// to a UniqIDGenerator, no goroutines.
//
// # Who uses it
//
//   - broker/ builds an Ext from a send request (Message plus the stamps the
//     leader chooses: store timestamp, store host, UNIQ_KEY if absent) and
//     encodes it with AppendRecord into the raft entry.
//   - commitlog/ copies encoded records into mapped segments (or encodes
//     straight into them with EncodeRecordInto), fixes their offsets with
//     PatchOffsets when the apply order assigns them, pads a segment's tail
//     with PutBlank, and on recovery walks a segment with PeekSize,
//     PeekMagic, ParseView and RecordView.VerifyBodyCRC.
//   - store/'s dispatcher reads records with ParseView (no allocation) to
//     build consume-queue units (PhysicalOffset, Size, TagsHashCode) and
//     index entries (Topic, KEYS, UNIQ_KEY, StoreTimestamp).
//   - client/ decodes pull bodies with DecodeRecords.
//
// Every function may be called from any goroutine; only UniqIDGenerator
// keeps state, and it locks. Functions never retain their arguments, except
// that a RecordView aliases the bytes it was parsed from.
//
// # Invariants
//
//   - Encoding is deterministic: properties are written in ascending byte
//     order of their names, so the same Ext encodes to the same bytes on
//     every replica (docs/invariants.md I2).
//   - Only magic MagicV1 (1-byte topic length) is written or read, because
//     the Go client can decode nothing else; so topics are 1..127 bytes.
//   - The encoder derives SysFlagBornHostV6/SysFlagStoreHostV6 from the
//     address families and ignores whatever e.SysFlag said about them. An
//     IPv4 address is written in 4 bytes; anything else, IPv4-mapped IPv6
//     included, in 16.
//   - Decoding is strict: TOTALSIZE must equal the sum of the field lengths,
//     the properties must be well-formed and, in DecodeRecord, the body CRC
//     must match. Anything decoded re-encodes to a record that decodes to
//     the same Ext, and to the same bytes when its properties were in
//     canonical (sorted, no duplicate) order.
//   - No input, however malformed, makes a decoder panic; each failure is
//     one of the sentinel errors in errors.go, wrapped with the offset or
//     value at fault.
//
// # Record layout
//
// All integers are big-endian. Offsets are for IPv4 born and store hosts;
// each IPv6 host (sysFlag 0x10 born, 0x20 store) adds 12 bytes to every
// later offset. n = body length, t = topic length, p = properties length.
//
//	offset     size  field                    notes
//	---------  ----  -----------------------  ----------------------------------
//	0          4     TOTALSIZE      int32     whole record = 91 + n + t + p (+12 per IPv6 host)
//	4          4     MAGICCODE      uint32    0xDAA320A7 (MagicV1)
//	8          4     BODYCRC        uint32    CRC32-IEEE(body) & 0x7FFFFFFF
//	12         4     QUEUEID        int32
//	16         4     FLAG           int32     user flag
//	20         8     QUEUEOFFSET    int64     logical offset in the consume queue
//	28         8     PHYSICALOFFSET int64     commitlog offset of this record
//	36         4     SYSFLAG        int32     bits below
//	40         8     BORNTIMESTAMP  int64     ms
//	48         8/20  BORNHOST                 IPv4(4) or IPv6(16) + port int32
//	56         8     STORETIMESTAMP int64     ms
//	64         8/20  STOREHOST                IPv4(4) or IPv6(16) + port int32
//	72         4     RECONSUMETIMES int32
//	76         8     PREPARED TX OFFSET int64
//	84         4+n   BODYLEN int32 + BODY     compressed if sysFlag 0x1
//	88+n       1+t   TOPICLEN uint8 + TOPIC   1 <= t <= 127
//	89+n+t     2+p   PROPLEN int16 + PROPS    0 <= p <= 32767
//	91+n+t+p         end
//
// SysFlag bits:
//
//	0x001 compressed body           0x010 born host is IPv6
//	0x002 multi-tags topic          0x020 store host is IPv6
//	0x004 tx prepared (half)        0x040 needs unwrap (5.x inner batch)
//	0x008 tx commit                 0x080 inner batch (5.x)
//	0x00C tx rollback (mask 0xC)    0x700 compression type: 0x100 LZ4,
//	                                      0x200 ZSTD, 0x300 or 0 zlib
//
// The end of a commitlog segment that cannot hold the next record is filled
// with a blank entry (PutBlank), which never appears in a pull body:
//
//	offset  size  field
//	0       4     TOTALSIZE int32   bytes from here to the end of the segment
//	4       4     MAGICCODE uint32  0xCBD43194 (BlankMagic)
//	8       ...   unspecified
//
// # Properties
//
// Properties are UTF-8 text of items "name 0x01 value 0x02", every item
// including the last terminated by 0x02:
//
//	T A G S 01 T a g A 02 U N I Q _ K E Y 01 C 0 A 8 ... 02
//
// Names are non-empty; neither names nor values contain 0x01 or 0x02.
// DecodeProperties rejects anything else (see its documentation for the
// exact rules); ValidateProperties checks a map before encoding.
//
// # Message ids
//
// The offset message id identifies a stored record on any replica:
//
//	IPv4: storeIP(4) port(int32) physicalOffset(int64) = 16 bytes = 32 hex chars
//	IPv6: storeIP(16) port(int32) physicalOffset(int64) = 28 bytes = 56 hex chars
//
// e.g. 127.0.0.1:10911 at offset 0x206 is 7F00000100002A9F0000000000000206.
// The client message id (UNIQ_KEY) is opaque to the broker; UniqIDGenerator
// makes them in the Java layout (see its documentation).
package message
