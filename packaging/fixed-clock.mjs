// Loaded into `mcpb pack` (node --import) by scripts/release: the packer
// dates every zip entry with the current time (fflate's mtime: new Date()),
// which would make two packs of one commit differ. Here the clock reads
// SOURCE_DATE_EPOCH, the commit's time; a date built from explicit values is
// untouched.
const epochMs = Number(process.env.SOURCE_DATE_EPOCH) * 1000;
if (!Number.isSafeInteger(epochMs)) {
  throw new Error('fixed-clock.mjs: SOURCE_DATE_EPOCH is not set to a number of seconds');
}

const RealDate = globalThis.Date;
class FixedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(epochMs);
    else super(...args);
  }
  static now() {
    return epochMs;
  }
}
globalThis.Date = FixedDate;
