{
  description = "profnet, forum and microblog data API: development shell";
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in {
      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          packages = [ pkgs.nodejs_22 pkgs.postgresql_16 pkgs.redis pkgs.wrk ];
          shellHook = ''
            export DATABASE_URL_EXAMPLE="postgres://postgres@127.0.0.1:5432/test"
          '';
        };
      });
    };
}
