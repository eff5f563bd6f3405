//! The user guide: Markdown pages kept in the crate (`src/guide/*.md`), readable on GitHub and
//! built into the binary, so `perfbisect guide PAGE` prints one offline and `perfbisect man
//! --dir` writes each as a manual page of section 7. The reference pages' tables are generated
//! from the code (`generate`), so the guide and the code cannot disagree.

pub mod generate;
mod pages;
pub mod roff;

pub use pages::{page, Page, PAGES};
