#ifndef MARQUEE_FUZZ_DRIVER_H
#define MARQUEE_FUZZ_DRIVER_H

// The entry point of marquee-fuzz: SwiftPM links an executable's `main` to `<Module>_main`
// (here MarqueeFuzz_main), which hands over to libFuzzer's driver with the Swift target's
// LLVMFuzzerTestOneInput.
int MarqueeFuzz_main(int argc, char **argv);

#endif
