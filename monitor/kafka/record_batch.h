/* Kafka record batches (message format v2) -> rankmon's SourceRecord tuples, in C.
 *
 * kafka-python reads each record of a fetched batch with a Python varint loop and builds two
 * objects per record; for rankmon's 3 KB ranking events that is most of the consumer's time.
 * rb_parse_records reads the records section of one v2 batch (already decompressed by
 * kafka-python) and builds one `record_type(topic, partition, offset, timestamp_ms, key,
 * value)` per record directly. The caller (monitor/kafka/records.py) keeps everything else
 * kafka-python does with a batch: CRC check, decompression, control and legacy batches.
 *
 * Record layout (KIP-98), every integer a zigzag varint unless noted:
 *   length, attributes, timestampDelta (varlong), offsetDelta, keyLength, key,
 *   valueLength, value, headerCount, [headerKeyLength, headerKey (UTF-8), headerValueLength,
 *   headerValue] ...
 * A negative key or value length is a null key or value (rankmon reads a null value as b"");
 * a negative header count or header key length is corrupt, as is a record whose fields do
 * not fill exactly `length` bytes, or bytes left over after the last record.
 */
#ifndef RANKMON_RECORD_BATCH_H
#define RANKMON_RECORD_BATCH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* parse_records(buffer, pos, count, base_offset, first_timestamp, max_timestamp,
 *               log_append_time, topic, partition, record_type) -> (records, error)
 * `error` is None, or a str saying what is corrupt; `records` then holds the records before
 * it (kafka-python likewise hands those out before it raises). */
PyObject *rb_parse_records(PyObject *self, PyObject *args, PyObject *kwargs);

#endif
