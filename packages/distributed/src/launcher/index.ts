// launcher: see the package README.
export {};
