#![no_std]
// This file exists to enable the library target (aya-build builds the `wakeviz` bin).
